"""The WY stage of the chunked delta rule: per chunk of C tokens (one head),

    gc_r  = sum_{s<=r} g_s                       chunk-local cumulative log-decay
    L_rs  = beta_r exp(gc_r - gc_s) k_r . k_s    for s < r (strictly lower)
    A     = (I + L)^-1                            unit lower triangular
    W     = A (beta exp(gc) * K)                  [C, K]
    Utld  = A (beta * V)                          [C, V]

so that the chunk's corrected values ("new v") are U = Utld - W S for the chunk's initial
state S. The inverse is blocked: 16 x 16 diagonal blocks by forward substitution, then the
off-diagonal blocks A_ij = -A_ii sum_{j<=m<i} L_im A_mj.

Backward (VJP of the stage), given dW and dU (= dUtld):
    dA  = dW (beta exp(gc) K)^T + dU (beta V)^T
    dK += beta exp(gc) * (A^T dW);  dV = beta * (A^T dU)
    dL  = -A^T dA A^T  (strictly lower part), and L's own derivatives in k, beta and gc.
"""
from __future__ import annotations

import triton
import triton.language as tl

from kdiff.kernels.gdn.jit import shape_jit
from kdiff.kernels.gdn.tile_ops import (
    chunk_rows,
    decay,
    load_head_vec,
    load_log_decay,
    load_rows,
    mm,
    rectangle_sums,
    store_flag,
    store_head_vec,
    store_rows,
    unit_lower_inverse16,
    unit_lower_inverse16x4,
)


@shape_jit
def chunk_cumsum_kernel(g, gc, bounds, H, BT: tl.constexpr, BH: tl.constexpr):
    """gc = chunk-local inclusive cumulative sum of g [tokens, H], in fp64 (see tile_ops.decay).
    Grid (chunks, H/BH)."""
    i_c, i_h = tl.program_id(0), tl.program_id(1)
    start, end, _, _ = chunk_rows(bounds, i_c, BT)
    rows = start + tl.arange(0, BT)
    heads = i_h * BH + tl.arange(0, BH)
    offs = rows.to(tl.int64)[:, None] * H + heads[None, :]
    mask = (rows < end)[:, None] & (heads < H)[None, :]
    x = tl.load(g + offs, mask=mask, other=0.0).to(tl.float64)
    tl.store(gc + offs, tl.cumsum(x, 0), mask=mask)


@triton.jit
def _decayed_block(kk, bi, gci, gcj, ri, rj, end, STRICT: tl.constexpr):
    """Block of L from its k_r . k_s products: beta_r exp(gc_r - gc_s) k_r . k_s over rows ri,
    columns rj (token indices); zero past `end` and, on a diagonal block, on and above the
    diagonal. The exponent is selected away (not multiplied by zero) where it may overflow."""
    mask = (ri < end)[:, None] & (rj < end)[None, :]
    if STRICT:
        mask = mask & (ri[:, None] > rj[None, :])
    return tl.where(mask, kk * bi[:, None] * decay(gci[:, None] - gcj[None, :]), 0.0)


@triton.jit
def _mm32(a, b):
    return tl.dot(a, b, input_precision="ieee")


@triton.jit
def _merge(a, b, DT: tl.constexpr):
    """A product of the inverse's block merge (fp32 operands and accumulation). In fp32 IEEE;
    in bf16 and fp16 TF32, as fla's on Hopper: tensor cores instead of the FMA units, operands
    rounded to 11 significant bits (u = 2^-11, fp16's own u and 8x finer than bf16's), and the
    inverse is rounded to the working dtype when it is stored right after, so the merge adds
    at most one more rounding of the working dtype's size to each A block."""
    if DT == tl.float32:
        out = tl.dot(a, b, input_precision="ieee")
    else:
        out = tl.dot(a, b, input_precision="tf32")
    return out


@triton.jit
def store_inverse_block(A, block, row0, col0, end, H, h, BT: tl.constexpr):
    """One 16 x 16 block of the inverse, at rows row0.. and columns col0.. of its chunk."""
    r = tl.arange(0, 16)
    base = A + (row0.to(tl.int64) * H + h) * BT + col0
    tl.store(base + r[:, None] * (H * BT) + r[None, :], block.to(A.dtype.element_ty),
             mask=(row0 + r < end)[:, None])


@triton.jit
def load_inverse(A, start, end, H, h, BT: tl.constexpr):
    """The chunk's [BT, BT] inverse, zero above the diagonal and past `end`."""
    r = tl.arange(0, BT)
    valid = start + r < end
    base = A + (start.to(tl.int64) * H + h) * BT
    mask = valid[:, None] & (r[:, None] >= r[None, :]) & valid[None, :]
    return tl.load(base + r[:, None] * (H * BT) + r[None, :], mask=mask, other=0.0)


@triton.jit
def store_inverse_rows(A, a_ii, l_off, i, row0, start, kend, end, H, h, BT: tl.constexpr,
                       BC: tl.constexpr):
    """Row block i (rows row0 .. row0 + BC, row0 = start + i BC) of A = (I + L)^-1 over a
    chunk of BT rows, stored as rows [tokens, H, BT] in fp32: given a_ii = (I + L_ii)^-1 and
    l_off = L_i,<i [BC, BT] (zero in the columns from kend = min(row0, end) on),
    A_i,: = a_ii (E_i - L_i,<i A_<i,<i), E_i the [BC, BT] selection of sub-chunk i's columns
    (exact in fp32: products with 1, sums with 0), A_<i,<i read back from the row blocks
    stored before it (after a barrier). The same recurrence as wy_inverse_kernel's unrolled
    blocks at 64 (A_ij = -A_ii sum_m L_im A_mj), one row block at a time, for any BT / BC."""
    rc = tl.arange(0, BC)
    rhs = tl.where(rc[:, None] + i * BC == tl.arange(0, BT)[None, :], 1.0, 0.0)
    if BT > BC:
        tl.debug_barrier()
        rhs -= _mm32(l_off, load_inverse(A, start, kend, H, h, BT))
    store_rows(A, _mm32(a_ii, rhs), row0, end, H, h, BT, 0, BC, BT)


@triton.jit
def _kt(k, row0, end, H, h, K, col0, BKS: tl.constexpr, DT: tl.constexpr):
    """A [16, BKS] slice of k's rows (a dot operand in the working dtype) and its transpose."""
    b_k = load_rows(k, row0, end, H, h, K, col0, 16, BKS)
    return b_k, tl.trans(b_k)


@shape_jit
def wy_inverse_kernel(k, beta, gc, A, bounds, H, K, BT: tl.constexpr, BKS: tl.constexpr):
    """A = (I + L)^-1 per chunk, fp32, stored as rows [tokens, H, BT] (lower part only;
    consumers mask the rest). Grid (chunks, H). BT is 16 or 64 (blocks of 16).

    The k_r . k_s products of the (up to) ten 16 x 16 blocks of L are accumulated over
    BKS-wide slices of K: only four [16, BKS] slices of k are live at once (all of K in
    registers made this kernel spill on sm_90). Then the diagonal blocks are inverted by
    forward substitution, and the off-diagonal blocks of the inverse assembled in fp32,
    A_ij = -A_ii sum_{j<=m<i} L_im A_mj."""
    i_c, h = tl.program_id(0), tl.program_id(1)
    start, end, _, _ = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = k.dtype.element_ty
    r0 = start + tl.arange(0, 16)
    kk00 = tl.zeros([16, 16], dtype=tl.float32)
    if BT == 64:
        kk10 = tl.zeros([16, 16], dtype=tl.float32)
        kk11 = tl.zeros([16, 16], dtype=tl.float32)
        kk20 = tl.zeros([16, 16], dtype=tl.float32)
        kk21 = tl.zeros([16, 16], dtype=tl.float32)
        kk22 = tl.zeros([16, 16], dtype=tl.float32)
        kk30 = tl.zeros([16, 16], dtype=tl.float32)
        kk31 = tl.zeros([16, 16], dtype=tl.float32)
        kk32 = tl.zeros([16, 16], dtype=tl.float32)
        kk33 = tl.zeros([16, 16], dtype=tl.float32)
    for col0 in range(0, K, BKS):
        k0, k0t = _kt(k, start, end, H, h, K, col0, BKS, DT)
        kk00 += mm(k0, k0t, DT)
        if BT == 64:
            k1, k1t = _kt(k, start + 16, end, H, h, K, col0, BKS, DT)
            k2, k2t = _kt(k, start + 32, end, H, h, K, col0, BKS, DT)
            k3, k3t = _kt(k, start + 48, end, H, h, K, col0, BKS, DT)
            kk10 += mm(k1, k0t, DT)
            kk11 += mm(k1, k1t, DT)
            kk20 += mm(k2, k0t, DT)
            kk21 += mm(k2, k1t, DT)
            kk22 += mm(k2, k2t, DT)
            kk30 += mm(k3, k0t, DT)
            kk31 += mm(k3, k1t, DT)
            kk32 += mm(k3, k2t, DT)
            kk33 += mm(k3, k3t, DT)
    b0 = load_head_vec(beta, start, end, H, h, 16)
    g0 = load_log_decay(gc, start, end, H, h, 16)
    L00 = _decayed_block(kk00, b0, g0, g0, r0, r0, end, True)
    if BT == 16:
        store_inverse_block(A, unit_lower_inverse16(L00), start, 0, end, H, h, BT)
    else:
        r1 = r0 + 16
        r2 = r0 + 32
        r3 = r0 + 48
        b1 = load_head_vec(beta, start + 16, end, H, h, 16)
        b2 = load_head_vec(beta, start + 32, end, H, h, 16)
        b3 = load_head_vec(beta, start + 48, end, H, h, 16)
        g1 = load_log_decay(gc, start + 16, end, H, h, 16)
        g2 = load_log_decay(gc, start + 32, end, H, h, 16)
        g3 = load_log_decay(gc, start + 48, end, H, h, 16)
        A00, A11, A22, A33 = unit_lower_inverse16x4(
            L00, _decayed_block(kk11, b1, g1, g1, r1, r1, end, True),
            _decayed_block(kk22, b2, g2, g2, r2, r2, end, True),
            _decayed_block(kk33, b3, g3, g3, r3, r3, end, True))
        L10 = _decayed_block(kk10, b1, g1, g0, r1, r0, end, False)
        L20 = _decayed_block(kk20, b2, g2, g0, r2, r0, end, False)
        L21 = _decayed_block(kk21, b2, g2, g1, r2, r1, end, False)
        L30 = _decayed_block(kk30, b3, g3, g0, r3, r0, end, False)
        L31 = _decayed_block(kk31, b3, g3, g1, r3, r1, end, False)
        L32 = _decayed_block(kk32, b3, g3, g2, r3, r2, end, False)
        # the inverse is assembled in fp32 (products in TF32 below fp32: _merge)
        A10 = -_merge(A11, _merge(L10, A00, DT), DT)
        A21 = -_merge(A22, _merge(L21, A11, DT), DT)
        A32 = -_merge(A33, _merge(L32, A22, DT), DT)
        A20 = -_merge(A22, _merge(L20, A00, DT) + _merge(L21, A10, DT), DT)
        A31 = -_merge(A33, _merge(L31, A11, DT) + _merge(L32, A21, DT), DT)
        A30 = -_merge(A33, _merge(L30, A00, DT) + _merge(L31, A10, DT) + _merge(L32, A20, DT),
                      DT)
        store_inverse_block(A, A00, start, 0, end, H, h, BT)
        store_inverse_block(A, A10, start + 16, 0, end, H, h, BT)
        store_inverse_block(A, A11, start + 16, 16, end, H, h, BT)
        store_inverse_block(A, A20, start + 32, 0, end, H, h, BT)
        store_inverse_block(A, A21, start + 32, 16, end, H, h, BT)
        store_inverse_block(A, A22, start + 32, 32, end, H, h, BT)
        store_inverse_block(A, A30, start + 48, 0, end, H, h, BT)
        store_inverse_block(A, A31, start + 48, 16, end, H, h, BT)
        store_inverse_block(A, A32, start + 48, 32, end, H, h, BT)
        store_inverse_block(A, A33, start + 48, 48, end, H, h, BT)


@shape_jit
def wy_apply_kernel(k, v, beta, gc, A, w, u, bounds, H, K, V,
                    BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    """W = A (beta exp(gc) K), Utld = A (beta V), over BK- and BV-wide column blocks (the next
    block's loads in flight while this one's product runs). Grid (chunks, H)."""
    i_c, h = tl.program_id(0), tl.program_id(1)
    start, end, _, _ = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = k.dtype.element_ty
    b_A = load_inverse(A, start, end, H, h, BT).to(tl.float32)
    b_beta = load_head_vec(beta, start, end, H, h, BT)
    b_gc = load_log_decay(gc, start, end, H, h, BT)
    # the row scalings of K and V move onto A's columns: [BT, BT] is the smaller tile
    store_products(b_A * (b_beta * decay(b_gc))[None, :], k, w, start, end, H, h, K, BT, BK, DT)
    store_products(b_A * b_beta[None, :], v, u, start, end, H, h, V, BT, BV, DT)


@triton.jit
def store_products(A_scaled, x, out, start, end, H, h, D, BT: tl.constexpr, BD: tl.constexpr,
                   DT: tl.constexpr):
    """out = A_scaled X for the chunk's rows of a packed [tokens, H, D] tensor X, BD columns
    at a time (A_scaled [BT, BT]: A with its columns scaled, W's or Utld's)."""
    for col0 in range(0, D, BD):
        b_x = load_rows(x, start, end, H, h, D, col0, BT, BD)
        store_rows(out, mm(A_scaled, b_x, DT), start, end, H, h, D, col0, BT, BD)


@triton.jit
def wy_value_grads(A, beta, v, du, dv, hbuf, i_c, start, end, H, h, K, V,
                   BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, DT: tl.constexpr):
    """The part of the WY VJP that runs over V, the same for a scalar and a per-channel gate:
    with U = Utld - W S (S chunk i_c's initial state in hbuf) and Utld = A (beta V), stores
    dv = beta (A^T dU) and returns the chunk's A and beta with dA's Utld part dU (beta V)^T,
    dW = -dU S^T, dbeta's V part sum_v (A^T dU) V, and the count of non-finite dv values."""
    b_A = load_inverse(A, start, end, H, h, BT)
    b_beta = load_head_vec(beta, start, end, H, h, BT)
    state = hbuf + (i_c.to(tl.int64) * H + h) * K * V
    rk = tl.arange(0, BK)
    b_db = tl.zeros([BT], dtype=tl.float32)
    d_a = tl.zeros([BT, BT], dtype=tl.float32)
    d_w = tl.zeros([BT, BK], dtype=tl.float32)
    bad = tl.full([], 0, tl.int32)
    for i_v in range(tl.cdiv(V, BV)):
        cv = i_v * BV + tl.arange(0, BV)
        S = tl.load(state + rk[:, None] * V + cv[None, :],
                    mask=(rk < K)[:, None] & (cv < V)[None, :], other=0.0)
        b_v = load_rows(v, start, end, H, h, V, i_v * BV, BT, BV)
        b_du = load_rows(du, start, end, H, h, V, i_v * BV, BT, BV)
        d_w -= mm(b_du, tl.trans(S), DT)
        d_bv = mm(tl.trans(b_A), b_du, DT)                  # d(beta V)
        bad += store_rows(dv, d_bv * b_beta[:, None], start, end, H, h, V, i_v * BV, BT, BV)
        b_db += tl.sum(d_bv * b_v.to(tl.float32), 1)
        d_a += mm(b_du, tl.trans(b_v.to(tl.float32) * b_beta[:, None]), DT)
    return b_A, b_beta, d_a, d_w, b_db, bad


@triton.jit
def inverse_grad(b_A, d_a, DT: tl.constexpr):
    """dL = -A^T dA A^T, the VJP of A = (I + L)^-1 (consumers keep its strictly lower part)."""
    return -mm(mm(tl.trans(b_A), d_a, DT), tl.trans(b_A), DT)


@shape_jit
def wy_bwd_kernel(k, v, beta, gc, A, hbuf, du, dk_part, dg_part, dk, dv, dbeta, dg, flags,
                  bounds, H, K, V, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    """VJP of the WY stage; forms dW = -dU S^T from the chunk's stored initial state S, and
    finishes dk, dv, dbeta and dg. Grid (chunks, H). flags [chunks, H]: NaN where the
    program stored a non-finite value."""
    i_c, h = tl.program_id(0), tl.program_id(1)
    start, end, r, valid = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = k.dtype.element_ty
    b_A, b_beta, d_a, d_w, b_db, bad = wy_value_grads(A, beta, v, du, dv, hbuf, i_c, start,
                                                      end, H, h, K, V, BT, BK, BV, DT)
    b_gc = load_log_decay(gc, start, end, H, h, BT)
    gamma = decay(b_gc)
    bg = b_beta * gamma
    b_k = load_rows(k, start, end, H, h, K, 0, BT, BK)
    d_a += mm(d_w, tl.trans(b_k.to(tl.float32) * bg[:, None]), DT)
    d_bk = mm(tl.trans(b_A), d_w, DT)                       # d(beta exp(gc) K)
    k_dbk = tl.sum(d_bk * b_k.to(tl.float32), 1)
    b_db += k_dbk * gamma
    # the log-gate derivative: gamma_r carries g_j for j <= r, L_rs for s < j <= r
    b_dg = load_head_vec(dg_part, start, end, H, h, BT) + tl.cumsum(bg * k_dbk, 0, reverse=True)
    strict = (r[:, None] > r[None, :]) & valid[:, None] & valid[None, :]
    d_l = inverse_grad(b_A, d_a, DT)
    d_le = tl.where(strict, d_l * decay(b_gc[:, None] - b_gc[None, :]), 0.0)
    kk = mm(b_k, tl.trans(b_k), DT)
    d_scaled = d_le * b_beta[:, None]                          # dL * dL/d(k_r . k_s)
    b_dk = (load_rows(dk_part, start, end, H, h, K, 0, BT, BK) + d_bk * bg[:, None]
            + mm(d_scaled + tl.trans(d_scaled), b_k, DT))
    b_db += tl.sum(d_le * kk, 1)
    b_dg += rectangle_sums(d_scaled * kk, BT)                  # dL * L
    bad += store_rows(dk, b_dk, start, end, H, h, K, 0, BT, BK)
    bad += store_head_vec(dbeta, b_db, start, end, H, h, BT)
    bad += store_head_vec(dg, b_dg, start, end, H, h, BT)
    store_flag(flags, i_c * H + h, bad)
