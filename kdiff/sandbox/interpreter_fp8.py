"""fp8 on Triton's interpreter as a GPU converts it: widened to its value with NaN and Inf
kept, narrowed to nearest even with saturation.

The interpreter holds fp8 as its bit patterns (uint8) and converts by moving the exponent and
mantissa fields. Widening (`x.to(tl.float32)`, to fp16 or bf16, and the operands of `tl.dot`)
clamped the exponent into the wider format's range: E4M3's NaN (0x7f, 0xff) came out as +-480,
E5M2's infinities as +-65536 and its NaNs as finite numbers up to +-114688. A GPU's conversion
(cvt from e4m3/e5m2) keeps them, so an honest fp8 GEMM that loads E4M3 tiles and widens them, or
hands them to `tl.dot`, failed EXC-01 on the CPU (`nan_swallowed`) for the interpreter's reason.
Widening is exact in every wider format, so each bit pattern is read from a table of its value
(torch's own decoding, exact). Narrowing (`x.to(tl.float8e4nv)`) rounded subnormals and carries
wrongly: 1,903 of 16,384 normal draws (x 1e-3 to x 300) landed on another E4M3 value than
torch's rounding, 833 for E5M2. Triton lowers it to `cvt.rn.satfinite.e4m3x2.f32` (and e5m2x2):
to nearest even, past the largest finite value that value with its sign, NaN kept; torch's
casts round the same way (E5M2's overflow to Inf is saturated here). The fnuz formats' narrowing
(AMD's) is left as Triton ships it.
"""

from __future__ import annotations

import numpy as np


def _tables(tl) -> dict:
    """Each fp8 format torch also has, by its Triton type: its 256 values in fp32."""
    import torch

    formats = {
        "float8e4nv": "float8_e4m3fn",
        "float8e5": "float8_e5m2",
        "float8e4b8": "float8_e4m3fnuz",
        "float8e5b16": "float8_e5m2fnuz",
    }
    bits = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    return {
        getattr(tl, ours): bits.view(getattr(torch, theirs)).to(torch.float32).numpy()
        for ours, theirs in formats.items()
        if hasattr(tl, ours) and hasattr(torch, theirs)
    }


def _bf16_bits(values: np.ndarray) -> np.ndarray:
    """fp32 values that bf16 holds exactly (an fp8 value has at most 4 significant bits) as
    bf16 bit patterns, as the interpreter keeps bf16: the upper half of the fp32 pattern, and
    a quiet NaN for a NaN (torch widens the fnuz NaN to 0x7f800001, whose upper half is Inf)."""
    upper = (values.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), upper)


# The formats Triton narrows to with `cvt.rn.satfinite`, by Triton type: torch's counterpart
NARROWED = {"float8e4nv": "float8_e4m3fn", "float8e5": "float8_e5m2"}


def _narrowed(values: np.ndarray, fp8) -> np.ndarray:
    """fp32 values to fp8 bit patterns: to nearest even, saturating at the largest finite value
    (an infinity too), NaN kept."""
    import torch

    x = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32))
    rounded = x.to(fp8).float()
    past = torch.isinf(rounded) | (torch.isnan(rounded) & ~torch.isnan(x))
    largest = torch.full_like(x, torch.finfo(fp8).max).copysign(x)
    return torch.where(past, largest, rounded).to(fp8).view(torch.uint8).numpy()


def install(interpreter) -> None:
    """fp8 to fp16, bf16, fp32 or fp64 by each bit pattern's value, in a cast and in `tl.dot`;
    fp16, bf16, fp32 and fp64 to E4M3 and E5M2 as `cvt.rn.satfinite`."""
    builder = getattr(interpreter, "interpreter_builder", None)
    handle_type = getattr(interpreter, "TensorHandle", None)
    if builder is None or handle_type is None or getattr(builder, "has_fp8_widening", False):
        return
    import triton.language as tl

    tables = _tables(tl)
    wider = {
        tl.float16: lambda v: v.astype(np.float16),
        tl.bfloat16: _bf16_bits,
        tl.float32: lambda v: v,
        tl.float64: lambda v: v.astype(np.float64),
    }
    import torch

    narrowed = {
        getattr(tl, ours): getattr(torch, theirs)
        for ours, theirs in NARROWED.items()
        if hasattr(tl, ours) and hasattr(torch, theirs)
    }
    # a wider source as fp32 values: bf16 from its bit pattern, fp64 rounded first (as the GPU's
    # cvt.rn.f32.f64 before the fp8 conversion)
    as_fp32 = {
        tl.float16: lambda d: d.astype(np.float32),
        tl.bfloat16: lambda d: (d.astype(np.uint32) << np.uint32(16)).view(np.float32),
        tl.float32: lambda d: d,
        tl.float64: lambda d: d.astype(np.float32),
    }
    fp_to_fp = builder.create_fp_to_fp

    def create_fp_to_fp(src, dst_type, rounding_mode):
        table, widen = tables.get(src.dtype.scalar), wider.get(dst_type.scalar)
        if table is not None and widen is not None:
            bits = np.asarray(src.data, dtype=np.uint8)
            return handle_type(widen(table[bits]), dst_type.scalar)
        fp8, values = narrowed.get(dst_type.scalar), as_fp32.get(src.dtype.scalar)
        nearest = rounding_mode is None or getattr(rounding_mode, "name", "") == "RTNE"
        if fp8 is not None and values is not None and nearest:
            return handle_type(_narrowed(values(np.asarray(src.data)), fp8), dst_type.scalar)
        return fp_to_fp(src, dst_type, rounding_mode)

    dot = builder.create_dot

    def as_fp16(h):
        return create_fp_to_fp(h, tl.float16, None) if h.dtype.scalar in tables else h

    def create_dot(a, b, d, input_precision, max_num_imprecise_acc):
        """fp8 operands widened to fp16 as above (the interpreter's dot moved their bit
        fields itself); their products are exact in the fp32 accumulator either way."""
        return dot(as_fp16(a), as_fp16(b), d, input_precision, max_num_imprecise_acc)

    builder.create_fp_to_fp, builder.create_dot = create_fp_to_fp, create_dot
    builder.has_fp8_widening = True
