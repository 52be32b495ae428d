"""fp8 widened on Triton's interpreter as a GPU widens it: NaN and Inf kept.

The interpreter holds fp8 as its bit patterns (uint8) and widens it (`x.to(tl.float32)`, to
fp16 or bf16) by moving the exponent and mantissa fields, with the exponent clamped into the
wider format's range: E4M3's NaN (0x7f, 0xff) came out as +-480, E5M2's infinities as +-65536
and its NaNs as finite numbers up to +-114688. A GPU's conversion (cvt from e4m3/e5m2) keeps
them, so an honest fp8 GEMM that loads E4M3 tiles and widens them, or hands them to `tl.dot`
(which widened them the same way), failed EXC-01 on the CPU (`nan_swallowed`) for the
interpreter's reason. Widening is exact in every format wider than
fp8, so each bit pattern is read from a table of its value (torch's own decoding, exact) and
stored in the wider format. Narrowing to fp8 (Triton's saturating conversions) is left as
Triton ships it.
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


def install(interpreter) -> None:
    """fp8 to fp16, bf16, fp32 or fp64 by each bit pattern's value, in a cast and in `tl.dot`."""
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
    fp_to_fp = builder.create_fp_to_fp

    def create_fp_to_fp(src, dst_type, rounding_mode):
        table = tables.get(src.dtype.scalar)
        widen = wider.get(dst_type.scalar)
        if table is None or widen is None:
            return fp_to_fp(src, dst_type, rounding_mode)
        return handle_type(widen(table[np.asarray(src.data, dtype=np.uint8)]), dst_type.scalar)

    dot = builder.create_dot

    def as_fp16(h):
        return create_fp_to_fp(h, tl.float16, None) if h.dtype.scalar in tables else h

    def create_dot(a, b, d, input_precision, max_num_imprecise_acc):
        """fp8 operands widened to fp16 as above (the interpreter's dot moved their bit
        fields itself); their products are exact in the fp32 accumulator either way."""
        return dot(as_fp16(a), as_fp16(b), d, input_precision, max_num_imprecise_acc)

    builder.create_fp_to_fp, builder.create_dot = create_fp_to_fp, create_dot
    builder.has_fp8_widening = True
