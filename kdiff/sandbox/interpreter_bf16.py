"""bf16 on Triton's interpreter: arithmetic on the values, rounded as a GPU rounds it.

The interpreter holds bf16 as its bit patterns (uint16). As Triton ships it, it ran
arithmetic on them as integers and summed the patterns, and it truncated fp32 to bf16. Each
bf16 operation is computed in fp32 here and rounded to nearest even; reductions round each
partial, and so does fp16's `tl.sum`, which numpy adds in fp32 (kdiff.sandbox.interpreter_device
installs this in the worker; docs/cpu.md).
"""
from __future__ import annotations

import numpy as np


def _bf16_to_fp32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def _fp32_bits(x: np.ndarray) -> np.ndarray:
    """x's fp32 bits (a copy: 0-d stays 0-d). An fp64 x is rounded to fp32 to odd (toward
    zero, the last bit set where inexact), so that rounding those bits again to bf16, in
    any mode, gives what rounding x itself would."""
    x = np.asarray(x)
    if x.dtype == np.float64:
        near = x.astype(np.float32)
        toward_zero = np.where(np.abs(near.astype(np.float64)) > np.abs(x),
                               np.nextafter(near, np.float32(0)), near)
        odd = (toward_zero.view(np.uint32) | np.uint32(1)).view(np.float32)
        x = np.where(toward_zero.astype(np.float64) != x, odd, toward_zero)
    return np.array(x, dtype=np.float32).view(np.uint32)


def _fp32_to_bf16(x: np.ndarray) -> np.ndarray:
    """To nearest, ties to even; a NaN stays a (quiet) NaN of its sign."""
    bits = _fp32_bits(x)
    rounded = (bits + ((bits >> np.uint32(16)) & np.uint32(1)) + np.uint32(0x7FFF)) >> 16
    nan = ((bits >> np.uint32(16)) | np.uint32(0x0040)) & np.uint32(0xFFFF)
    return np.where(np.isnan(x), nan, rounded).astype(np.uint16)


def rounded_to_bf16(x: np.ndarray) -> np.ndarray:
    """fp32 values rounded to bf16 to nearest even, as fp32 values."""
    return _bf16_to_fp32(_fp32_to_bf16(x))


COMPARISONS = frozenset({np.less, np.greater, np.less_equal, np.greater_equal, np.equal,
                         np.not_equal})


def install(interpreter) -> None:
    """The interpreter holds bf16 as its bit patterns (uint16) and ran arithmetic on them as
    integers: `x * y` of two bf16 blocks came out as garbage, so every bf16 Triton kernel
    failed on the CPU for the interpreter's reason; and it truncated fp32 to bf16 where a
    GPU rounds to nearest. Each bf16 operation is now computed in
    fp32 and rounded to bf16 to nearest, as a GPU's bf16 instructions (or Triton's fp32
    upcast and round) give it: add, sub, mul, div and sqrt exactly so (24 >= 2 * 8 + 2 bits);
    comparisons on the values; `tl.dot` of bf16 operands with exact products, accumulated as
    its accumulator's type; bf16 widened to fp32 exactly, subnormals included."""
    builder = getattr(interpreter, "interpreter_builder", None)
    handle_type = getattr(interpreter, "TensorHandle", None)
    if builder is None or handle_type is None or getattr(builder, "has_bf16", False):
        return
    import triton.language as tl
    binary, unary = builder.binary_op, builder.unary_op
    fma, dot, clamp = builder.create_fma, builder.create_dot, builder.create_clampf

    def as_fp32(h):
        return handle_type(_bf16_to_fp32(h.data), tl.float32) if h.dtype.scalar == tl.bfloat16 \
            else h

    def as_bf16(h):
        return handle_type(_fp32_to_bf16(h.data), tl.bfloat16)

    def in_fp32(method):
        """A method of bf16 operands (and other arguments) computed in fp32, rounded once."""
        def run(*args):
            if not any(isinstance(a, handle_type) and a.dtype.scalar == tl.bfloat16
                       for a in args):
                return method(*args)
            return as_bf16(method(*(as_fp32(a) if isinstance(a, handle_type) else a
                                    for a in args)))
        return run

    arithmetic = in_fp32(binary)

    def binary_op(lhs, rhs, op):
        if op in COMPARISONS and lhs.dtype.scalar == tl.bfloat16:
            return binary(as_fp32(lhs), as_fp32(rhs), op)  # a boolean: nothing to round
        return arithmetic(lhs, rhs, op)

    def create_dot(a, b, d, input_precision, max_num_imprecise_acc):
        if tl.bfloat16 not in (a.dtype.scalar, b.dtype.scalar):
            return dot(a, b, d, input_precision, max_num_imprecise_acc)
        out = dot(as_fp32(a), as_fp32(b), as_fp32(d), input_precision, max_num_imprecise_acc)
        return as_bf16(out) if d.dtype.scalar == tl.bfloat16 else out

    _bf16_reductions(interpreter)
    cast, fp_to_fp = builder.cast_impl, builder.create_fp_to_fp

    def to_bf16(src, dst_type, rounding_mode=None):
        """The interpreter truncates to bf16 (and reads fp64 bits as integers); a GPU rounds
        to nearest even unless told to truncate (`fp_downcast_rounding="rtz"`)."""
        data = src.data.astype(np.float64 if src.dtype.scalar == tl.float64 else np.float32)
        if rounding_mode is not None and getattr(rounding_mode, "name", "") == "RTZ":
            out = np.where(np.isnan(data), _fp32_to_bf16(data),
                           (_fp32_bits(data) >> np.uint32(16)).astype(np.uint16))
        else:
            out = _fp32_to_bf16(data)
        return handle_type(out, tl.bfloat16)

    def cast_impl(src, dst_type):
        if dst_type.scalar == tl.bfloat16 and src.dtype.scalar in (tl.float16, tl.float32,
                                                                   tl.float64):
            return to_bf16(src, dst_type)
        # An integer converts by its value (cvt.rn.bf16.s32: rounded to nearest even); the
        # interpreter wrote the integer into bf16's bit pattern (the code 3 of a dequantizer
        # came out 2.8e-40). Every integer below 2^53 is exact in fp64, which to_bf16 rounds
        # once.
        if dst_type.scalar == tl.bfloat16 and src.dtype.scalar.is_int():
            return to_bf16(handle_type(src.data.astype(np.float64), tl.float64), dst_type)
        # bf16 is fp32's upper half: widening is exact, a subnormal stays that subnormal.
        # The interpreter's bit-field conversion renormalised a subnormal bf16 as if fp32's
        # exponent were wider, and clamped: 1.4e-39 came out 1.03e-38 (every wider format
        # and integer goes through fp32 here).
        if dst_type.scalar == tl.float32 and src.dtype.scalar == tl.bfloat16:
            return as_fp32(src)
        return cast(src, dst_type)

    def create_fp_to_fp(src, dst_type, rounding_mode):
        if dst_type.scalar == tl.bfloat16 and src.dtype.scalar in (tl.float32, tl.float64):
            return to_bf16(src, dst_type, rounding_mode)
        return fp_to_fp(src, dst_type, rounding_mode)

    builder.cast_impl, builder.create_fp_to_fp = cast_impl, create_fp_to_fp
    builder.binary_op, builder.unary_op, builder.create_dot = binary_op, in_fp32(unary), create_dot
    builder.create_fma, builder.create_clampf = in_fp32(fma), in_fp32(clamp)
    builder.create_erf = in_fp32(builder.create_erf)
    builder.create_rsqrt = in_fp32(builder.create_rsqrt)
    builder.has_bf16 = True


def _tree_sum(x: np.ndarray, axis: int, rounded) -> np.ndarray:
    """A sum of 16-bit values in pairs, each partial rounded by `rounded` to their format: a
    reduction tree's roundings, as a GPU's reduction of a bf16 or fp16 block makes them."""
    x = np.moveaxis(np.asarray(x, dtype=np.float32), axis, 0)
    while x.shape[0] > 1:
        if x.shape[0] % 2:
            x = np.concatenate([x, np.zeros_like(x[:1])])
        x = rounded(x[0::2] + x[1::2])
    return x[0]


def _rounded_to_fp16(x: np.ndarray) -> np.ndarray:
    """fp32 values rounded to fp16 to nearest even (numpy's cast), as fp32 values."""
    return x.astype(np.float16).astype(np.float32)


def _bf16_scan(x: np.ndarray, axis: int, op) -> np.ndarray:
    """A running sum or product of bf16 values, each step rounded to bf16."""
    x = np.moveaxis(np.asarray(x, dtype=np.float32), axis, 0).copy()
    for i in range(1, x.shape[0]):
        x[i] = rounded_to_bf16(op(x[i - 1], x[i]))
    return np.moveaxis(x, 0, axis)


def _bf16_reductions(interpreter) -> None:
    """tl.sum, tl.cumsum and tl.cumprod take a fast path on the raw data (np.sum of the bit
    patterns, for bf16); for bf16 they round each partial instead (_tree_sum, _bf16_scan).
    np.sum of fp16 adds in fp32 and rounds once, where a GPU's fp16 reduction rounds each
    partial to fp16: tl.sum of fp16 is a tree of fp16 roundings too, so that a kernel
    accumulating in fp16 errs on the CPU as on a GPU (np.cumsum of fp16 rounds each step
    already). tl.max and tl.min reduce bf16 in fp32 already (Triton's standard library)."""
    reduce_ops, scan_ops = getattr(interpreter, "ReduceOps", None), getattr(interpreter,
                                                                           "ScanOps", None)
    if reduce_ops is None or scan_ops is None or getattr(reduce_ops, "has_bf16", False):
        return
    import triton.language as tl
    total, cumsum, cumprod = reduce_ops.sum, scan_ops.cumsum, scan_ops.cumprod

    def half_sum(self, input):
        if input.dtype.scalar == tl.bfloat16:
            data, rounded = _bf16_to_fp32(input.handle.data), rounded_to_bf16
        elif input.dtype.scalar == tl.float16:
            data, rounded = input.handle.data.astype(np.float32), _rounded_to_fp16
        else:
            return total(self, input)
        out = _tree_sum(data, self.axis, rounded) if self.axis is not None else \
            _tree_sum(data.reshape(-1), 0, rounded)
        if self.keep_dims:
            out = np.expand_dims(out, self.axis) if self.axis is not None else \
                out.reshape((1,) * data.ndim)
        stored = _fp32_to_bf16(out) if input.dtype.scalar == tl.bfloat16 else \
            out.astype(np.float16)
        return self.to_tensor(stored, input.dtype)

    def bf16_scan(method, op):
        def run(self, input):
            if input.dtype.scalar != tl.bfloat16:
                return method(self, input)
            out = _bf16_scan(_bf16_to_fp32(input.handle.data), self.axis, op)
            return [self.to_tensor(_fp32_to_bf16(out), input.dtype)]
        return run

    reduce_ops.sum = half_sum
    scan_ops.cumsum = bf16_scan(cumsum, np.add)
    scan_ops.cumprod = bf16_scan(cumprod, np.multiply)
    reduce_ops.has_bf16 = True
