"""Tile helpers shared by the chunked kernels: the working-precision matrix product, row
loads of packed [tokens, heads, dim] tensors, and the 16 x 16 unit-lower-triangular inverse."""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def mm(a, b, DT: tl.constexpr):
    """a @ b with fp32 accumulation. In fp32 (DT float32) the operands stay fp32 and the
    product is IEEE fp32 (never TF32: fp32 means fp32); otherwise both operands are rounded to
    the working dtype first (bf16/fp16 tensor-core products, as the inputs themselves are)."""
    if DT == tl.float32:
        out = tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    else:
        out = tl.dot(a.to(DT), b.to(DT))
    return out


@triton.jit
def load_rows(ptr, row0, end, H, h, D, col0, NR: tl.constexpr, BD: tl.constexpr):
    """[NR, BD] tile (rows row0.., columns col0..) of a packed [tokens, H, D] tensor at head
    h; rows at or past `end` and columns past D read as zero."""
    rows = row0 + tl.arange(0, NR)
    cols = col0 + tl.arange(0, BD)
    offs = (rows.to(tl.int64)[:, None] * H + h) * D + cols[None, :]
    mask = (rows < end)[:, None] & (cols < D)[None, :]
    return tl.load(ptr + offs, mask=mask, other=0.0)


@triton.jit
def store_rows(ptr, value, row0, end, H, h, D, col0, NR: tl.constexpr, BD: tl.constexpr):
    rows = row0 + tl.arange(0, NR)
    cols = col0 + tl.arange(0, BD)
    offs = (rows.to(tl.int64)[:, None] * H + h) * D + cols[None, :]
    mask = (rows < end)[:, None] & (cols < D)[None, :]
    tl.store(ptr + offs, value.to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def load_head_vec(ptr, row0, end, H, h, NR: tl.constexpr):
    """[NR] fp32 values of a packed [tokens, H] tensor (gates, betas); past `end`: zero."""
    rows = row0 + tl.arange(0, NR)
    return tl.load(ptr + rows.to(tl.int64) * H + h, mask=rows < end, other=0.0).to(tl.float32)


@triton.jit
def store_head_vec(ptr, value, row0, end, H, h, NR: tl.constexpr):
    rows = row0 + tl.arange(0, NR)
    tl.store(ptr + rows.to(tl.int64) * H + h, value.to(ptr.dtype.element_ty), mask=rows < end)


@triton.jit
def unit_lower_inverse16(L):
    """(I + L)^-1 for a strictly lower-triangular 16 x 16 fp32 tile L, by forward substitution:
    with X = (I + L)^-1 - I, row i is X_i = -L_i + sum_{j<i} (-L_ij) X_j. Forward
    substitution is backward stable for triangular systems (Higham, Thm 8.5), unlike
    power-series or repeated-squaring inverses whose terms can outgrow the result."""
    r = tl.arange(0, 16)
    neg = -L
    X = neg
    for i in tl.static_range(2, 16):
        a = tl.sum(tl.where(r[:, None] == i, neg, 0.0), 0)
        a = a + tl.sum(a[:, None] * X, 0)
        X = tl.where(r[:, None] == i, a[None, :], X)
    return X + tl.where(r[:, None] == r[None, :], 1.0, 0.0)
