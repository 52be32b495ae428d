"""Chunked Mamba-3 SISO training backward: six Triton kernels after forward.py's (which
keeps the state entering each chunk, the phases, y before its gate, and the turned keys q'
and k'), and the autograd Function that joins them.

state_bwd_kernel, one program per (head, sequence), all of V, carries the one dependence
between chunks, the state's gradient, backwards: dS leaving each chunk (from the final
state's cotangent) into a buffer, and dS <- exp(la_last) dS + (exp(la) dY)^T Q' entering the
chunk before. The state entering the first chunk is S_init + prev0 v_init k_init^T: its
gradient gives dS_init, dv_init, dk_init and d prev0.

chunk_state_bwd_kernel and chunk_intra_bwd_kernel, each one program per (chunk, head,
sequence), every chunk at once, read q' and k' as the forward's products did and recompute
the forward's tiles (la, weights); the first the gradients through the state entering the
chunk and dS leaving it, the second, after it, adds those through the products within the
chunk (P), so that neither holds the other's tiles (one kernel spilled 1.8 kB a thread at 8
warps; apart, 148 B and 52 B):

    dy = dout silu(z),  dz = dout y silu'(z),  dD's share sum dy . v
    dP = dY V^T,  dQK = dP * decay * weight (lower triangle)
    dq' = exp(la) dY S + dQK K',   dk' = dQK^T Q' + w_last * (V dS),   dv = P^T dY + w_last *
          (K' dS^T) + D dY        (w_last_s = exp(la_last - la_s) scale_s)
    dscale_s = sum_{r > s} (QK decay dP)_rs + exp(la_last - la_s) v_s . dS k'_s,
    dgamma_r = (QK dP)_rr
    dadt_j = sum_{r >= j} exp(la_r) dy_r . (S q'_r) + sum_{r >= j, s < j} (dP P)_rs
             + sum_{s < j} w_last_s v_s . dS k'_s + exp(la_last) <dS, S>

storing dq' and dk' (forward.saved_dtype's precision). rotate_bwd_kernel, one program per
block of rows and head, turns them back (R(theta)^T) into the gradients of q + q_bias and
k + k_bias, and forms the phase gradient of each pair, -dq'_0 q'_1 + dq'_1 q'_0 (and k's),
with q' and k' formed again in fp32 from the stored phases. Apart, the chunk kernels hold
neither the rotation's cosines and sines nor its fp32 keys beside their tile products.

head_sums_kernel, one program per block of rows and key head, reads those per head once
more: their sums over the heads that share a key head (dq, dk, in the working dtype) and,
per block, over the sequence (the biases' gradients).

gates_bwd_kernel, one program per (head, sequence), walks the chunks backwards with the
running sum of the phase gradients (the phase is a running sum of pi tanh(angles) dt; the mod
passes gradients through): dangles, dt's share, dtheta_init; and the trapezoid weights'
chain rule: gamma_t = lam_t dt_t, scale_t = gamma_t + (1 - lam_{t+1}) dt_{t+1},
prev0 = (1 - lam_0) dt_0, lam = sigmoid(trap).

Deterministic: no atomics; the sums over the chunks (D), the batch (biases, D) and the heads
sharing a key head are in a fixed order: head_sums_kernel's over the heads and a block's
rows, then fixed-order torch reductions of per-program partials.

Non-finite values: the chunked gradients are exact only for finite values (0 * Inf in the
masked triangles, and the forward's buffers are the chunked forward's even where it fell
back). As kernels/gdn's backward, each call decides on the device whether the forward fell
back or a chunked gradient is NaN or Inf (gdn.fallback.fallback_flag: of dq, dk, dv and dz
through the flags their kernels set as they store them, gdn.tile_ops.store_flag, of the
smaller gradients through the gradients themselves), and launches the
token-by-token backward (recurrent.py) gated by that flag: it returns at once where the flag
is 0 and otherwise overwrites every gradient with autograd's derivatives of the reference's
operations, whose NaN and Inf masks are the reference's.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import triton
import triton.language as tl

from kdiff.kernels.gdn.fallback import fallback_flag
from kdiff.kernels.gdn.tile_ops import (
    count_nonfinite,
    exclusive_cumsum,
    mm,
    rectangle_sums,
    store_flag,
)
from kdiff.kernels.mamba3.forward import (
    CHUNK,
    CHUNK_BLOCK_V,
    ROTATE_ROWS,
    ROTATE_WARPS,
    Saved,
    chunk_and_block,
    chunk_gates,
    chunk_keys,
    launch,
    load_halves_pair,
    load_head_halves,
    load_state_halves,
    mamba3_siso_forward,
    phase_tile,
    saved_dtype,
    state_halves_offsets,
    store_state_halves,
)
from kdiff.kernels.mamba3.ops import (
    PI,
    load_halves,
    pair_offsets,
    sigmoid,
    state_tile,
    store_pair_rows,
    tanh64,
)
from kdiff.kernels.mamba3.recurrent import pair_block, recurrent_backward
from kdiff.kernels.mamba3.reference import States

# state_bwd_kernel's rows of the state a program (None: all of V, one program a head and
# sequence). Its chunk walk is sequential: at one sequence of 16384 tokens and 32 heads all of
# V gives 32 programs of 256 steps each; blocks of rows give more programs, each reading the
# same q' tiles. Not yet timed (benchmarks/mamba3_profile.py --parts state_block_sweep).
STATE_BLOCK_V: int | None = None


def _shares(total: torch.Tensor, n: int) -> torch.Tensor:
    """`n` slices for shares of `total`, summed into it afterwards: `total` itself, as the one
    slice, where n is 1."""
    return total.unsqueeze(0) if n == 1 else total.new_empty(n, *total.shape)


# head_sums_kernel's rows a program: a [32, K <= 256] fp32 tile and its sum on 4 warps. The
# kernel moves dq and dk once (read per head, written per key head in the working dtype); the
# three torch reductions and the cast it replaces read them three times.
HEAD_SUM_ROWS = 32


@triton.jit
def state_bwd_kernel(qr, v, adt, dt, trap, z, k0, v0, dout, dST, dhbuf,
                     dS0, dk0, dv0, dprev0, T, H, K, V,
                     BT: tl.constexpr, BK2: tl.constexpr, BV: tl.constexpr,
                     HAS_Z: tl.constexpr):
    """Grid (V-blocks, H, B): the state's gradient, walked backwards over the chunks from
    dST, the one dependence between chunks (qr: the forward's q', halves [B, T, H, K]); a
    row of dS depends on its own column of dY alone, so each program walks BV rows. dhbuf
    [B * H, chunks, V, K] (saved_dtype's) holds dS leaving each chunk as halves
    (state_halves_offsets), and dS <- exp(la_last) dS + (exp(la) dY)^T Q' enters the chunk
    before. The state entering the first chunk is S_init + prev0 v_init k_init^T: from its
    gradient, dS0 [B, H, V, K], dv0 [B, H, V], and each V-block's share of dk0 [B * H,
    V-blocks, K] and of dprev0 [B * H, V-blocks] (fp32)."""
    i_v, h, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    DT: tl.constexpr = qr.dtype.element_ty
    bh, j, jm, cv, vm, sm, soff = state_tile(b, h, i_v, H, K, V, BK2, BV)
    share = bh * tl.num_programs(0) + i_v
    dSe = tl.load(dST + soff, mask=sm, other=0.0).to(tl.float32)
    dSo = tl.load(dST + soff + 1, mask=sm, other=0.0).to(tl.float32)
    NC = tl.cdiv(T, BT)
    for i in range(0, NC):
        c = NC - 1 - i
        store_state_halves(dhbuf, state_halves_offsets(bh, c, NC, V, K, cv, j), K, dSe, dSo,
                           sm)
        t, rm, g, rows, gamma, scale, la, la_last = chunk_gates(adt, dt, trap, c, b, bh, T, BT)
        _, _, _, qe, qo = load_head_halves(qr, rows, rm, H, h, K, j, jm)
        v_off = ((rows * H + h) * V)[:, None] + cv[None, :]
        tm = rm[:, None] & vm[None, :]
        dy = tl.load(dout + v_off, mask=tm, other=0.0).to(tl.float32)
        if HAS_Z:
            zt = tl.load(z + v_off, mask=tm, other=0.0).to(tl.float32)
            dy = dy * (zt * sigmoid(zt))
        dye = tl.trans(dy * tl.exp(la.to(tl.float32))[:, None])
        carry = tl.exp(la_last.to(tl.float32))
        dSe = carry * dSe + mm(dye, qe, DT)
        dSo = carry * dSo + mm(dye, qo, DT)
    lam0 = sigmoid(tl.load(trap + bh * T).to(tl.float32))
    prev0 = (1 - lam0) * tl.load(dt + bh * T).to(tl.float32)
    kpe, kpo = load_halves(k0, bh * K, j, jm)
    vp = tl.load(v0 + bh * V + cv, mask=vm, other=0.0).to(tl.float32)
    tl.store(dS0 + soff, dSe, mask=sm)
    tl.store(dS0 + soff + 1, dSo, mask=sm)
    tl.store(dprev0 + share, tl.sum(vp * tl.sum(dSe * kpe[None, :] + dSo * kpo[None, :], 1)))
    tl.store(dv0 + bh * V + cv,
             prev0 * tl.sum(dSe * kpe[None, :] + dSo * kpo[None, :], 1), mask=vm)
    tl.store(dk0 + share * K + 2 * j, prev0 * tl.sum(dSe * vp[:, None], 0), mask=jm)
    tl.store(dk0 + share * K + 2 * j + 1, prev0 * tl.sum(dSo * vp[:, None], 0), mask=jm)


@triton.jit
def _value_tiles(v, dout, rows, rm, H, h, V, cv, vm):
    """A chunk's rows of v and of the output's cotangent (fp32), their offsets and mask."""
    v_off = ((rows * H + h) * V)[:, None] + cv[None, :]
    tm = rm[:, None] & vm[None, :]
    vt = tl.load(v + v_off, mask=tm, other=0.0).to(tl.float32)
    dy = tl.load(dout + v_off, mask=tm, other=0.0).to(tl.float32)
    return v_off, tm, vt, dy


@triton.jit
def _chunk_block(T, V, BT: tl.constexpr, BV: tl.constexpr):
    """A chunk kernel's program, grid (chunks x V-blocks, H, B): its chunk c, V-block i_v,
    head h and sequence b, and where its V-block's slice of the shares starts, in elements:
    of a [B, H, T] share (per_row; times K in a [B, T, H, K] one) and of a [B * H * chunks]
    one (per_chunk)."""
    c, i_v = chunk_and_block(V, BV)
    return (c, i_v, tl.program_id(1), tl.program_id(2),
            i_v * tl.num_programs(2).to(tl.int64) * tl.num_programs(1) * T,
            i_v * tl.num_programs(2) * tl.num_programs(1) * tl.cdiv(T, BT))


@triton.jit
def chunk_state_bwd_kernel(qr, kr, v, adt, dt, trap, D, z, hbuf, dhbuf, ybuf, dout, dkT, dvT,
                           dqr, dkr, dv_state, dz, dadt, dscale, dDc, dz_flags, T, H, K, V,
                           BT: tl.constexpr, BK2: tl.constexpr, BV: tl.constexpr,
                           HAS_D: tl.constexpr, HAS_Z: tl.constexpr):
    """Grid (chunks x V-blocks, H, B), every chunk at once: the gradients through the state
    entering the chunk (hbuf) and dS leaving it (state_bwd_kernel's dhbuf), and the pointwise
    ones; the products within the chunk are chunk_intra_bwd_kernel's, which adds them.
    Inputs as chunk_out_kernel's, with the training forward's hbuf and ybuf; cotangents
    dout [B, T, H, V], dkT [B, H, K], dvT [B, H, V]. Writes, on its V-block's columns,
    dv_state [B, T, H, V] (fp32, dv but for chunk_intra_bwd_kernel's terms) and dz (its
    dtype), and its V-block's share (CHUNK_BLOCK_V's slices) of the sums over V: dqr, dkr
    [B, T, H, K] (of q', k', halves as qr's; saved_dtype's), and fp32 dadt, dscale [B, H, T]
    and dDc [B * H * chunks], each chunk's share of dD; with HAS_Z, dz_flags [B * H * chunks] a slice
    (store_flag's: NaN where the block's dz is not finite)."""
    c, i_v, h, b, per_row, per_chunk = _chunk_block(T, V, BT, BV)
    DT: tl.constexpr = qr.dtype.element_ty
    bh, j, jm, cv, vm, sm, _ = state_tile(b, h, i_v, H, K, V, BK2, BV)
    NC = tl.cdiv(T, BT)
    dqr += per_row * K
    dkr += per_row * K
    dadt += per_row
    dscale += per_row
    dDc += per_chunk
    dz_flags += per_chunk
    t, rm, g, rows, gamma, scale, la, la_last = chunk_gates(adt, dt, trap, c, b, bh, T, BT)
    pm, first, second, qe, qo, ke, ko = load_halves_pair(qr, kr, rows, rm, H, h, K, j, jm)
    v_off, tm, vt, dy = _value_tiles(v, dout, rows, rm, H, h, V, cv, vm)
    if HAS_Z:
        zt = tl.load(z + v_off, mask=tm, other=0.0).to(tl.float32)
        sz = sigmoid(zt)
        y = tl.load(ybuf + v_off, mask=tm, other=0.0)
        dzt = dy * y * (sz * (1 + zt * (1 - sz)))
        tl.store(dz + v_off, dzt.to(dz.dtype.element_ty), mask=tm)
        store_flag(dz_flags, bh * NC + c, count_nonfinite(dzt, tm))
        dy = dy * (zt * sz)
    tl.store(dDc + bh * NC + c, tl.sum(tl.sum(dy * vt, 0), 0))
    e = tl.exp(la.to(tl.float32))
    carry = tl.exp(la_last.to(tl.float32))
    tail = tl.exp((la_last - la).to(tl.float32))
    wl = tail * scale
    last = t == T - 1
    # Each tile goes as soon as it has served, each result stored when formed: registers.
    Se, So = load_state_halves(hbuf, state_halves_offsets(bh, c, NC + 1, V, K, cv, j), K, sm)
    ys = mm(qe, tl.trans(Se), DT) + mm(qo, tl.trans(So), DT)
    adt_out = tl.cumsum(e * tl.sum(dy * ys, 1), 0, reverse=True)
    GT: tl.constexpr = dqr.dtype.element_ty
    tl.store(dqr + first, (e[:, None] * mm(dy, Se, DT)).to(GT), mask=pm)
    tl.store(dqr + second, (e[:, None] * mm(dy, So, DT)).to(GT), mask=pm)
    dSe, dSo = load_state_halves(dhbuf, state_halves_offsets(bh, c, NC, V, K, cv, j), K, sm)
    adt_state = carry * tl.sum(dSe * Se + dSo * So)
    dkTe, dkTo = load_halves(dkT, bh * K, j, jm)
    # the final key's cotangent, once: in the first V-block's share
    cot_rows = (last & (i_v == 0))[:, None]
    tl.store(dkr + first, (wl[:, None] * mm(vt, dSe, DT)
                           + tl.where(cot_rows, dkTe[None, :], 0.0)).to(GT), mask=pm)
    tl.store(dkr + second, (wl[:, None] * mm(vt, dSo, DT)
                            + tl.where(cot_rows, dkTo[None, :], 0.0)).to(GT), mask=pm)
    kd = mm(ke, tl.trans(dSe), DT) + mm(ko, tl.trans(dSo), DT)
    u = tl.sum(vt * kd, 1)
    dvTv = tl.load(dvT + bh * V + cv, mask=vm, other=0.0).to(tl.float32)
    dvt = wl[:, None] * kd + tl.where(last[:, None], dvTv[None, :], 0.0)
    if HAS_D:
        dvt = dvt + tl.load(D + h).to(tl.float32) * dy
    tl.store(dv_state + v_off, dvt, mask=tm)
    tl.store(dscale + g, tail * u, mask=rm)
    # d adt_j collects only the terms whose decay contains adt_j: exp(la_r) (r >= j), the
    # state step's exp(la_last - la_s) (s < j) and exp(la_last) (all j) here, P's
    # exp(la_r - la_s) (s < j <= r) in chunk_intra_bwd_kernel. Row sums minus column sums and
    # <dS, S_next> - w_last u, then a reverse cumsum, are equal in exact arithmetic but cancel
    # large terms: where adt_j's true gradient is 0 (a decay of 0 crossing j) they left errors
    # of u times the terms (kdiff ORD-01 at normal + 1e4, PRC-03 at normal x 100: -2e10 where
    # the oracle has -0)
    tl.store(dadt + g, adt_out + exclusive_cumsum(wl * u, BT) + adt_state, mask=rm)


@triton.jit
def _add_to(src, dst, offsets, mask, x):
    """dst[offsets] = src[offsets] + x, summed in fp32 and stored in dst's precision; returns
    the sum."""
    total = tl.load(src + offsets, mask=mask, other=0.0).to(tl.float32) + x
    tl.store(dst + offsets, total.to(dst.dtype.element_ty), mask=mask)
    return total


@triton.jit
def chunk_intra_bwd_kernel(qr, kr, v, adt, dt, trap, z, dout, dqr, dkr, dv_state, dv, dadt,
                           dscale, dgamma, dv_flags, T, H, K, V, BT: tl.constexpr,
                           BK2: tl.constexpr, BV: tl.constexpr, HAS_Z: tl.constexpr):
    """Grid (chunks x V-blocks, H, B), after chunk_state_bwd_kernel: adds the gradients
    through the products within each chunk, P = (Q'K'^T * decay * weight) on its lower
    triangle, to dv_state into dv (the block's columns; dv's dtype, the one rounding of the
    sum) and to its V-block's shares of dqr, dkr, dadt and dscale (each linear in dP = dY
    V^T, a sum over V), and writes the block's share of dgamma [B, H, T] (fp32) and its slice of dv_flags [B * H * chunks] (store_flag's, of dv
    as it leaves)."""
    c, i_v, h, b, per_row, per_chunk = _chunk_block(T, V, BT, BV)
    DT: tl.constexpr = qr.dtype.element_ty
    bh, j, jm, cv, vm, sm, _ = state_tile(b, h, i_v, H, K, V, BK2, BV)
    dqr += per_row * K
    dkr += per_row * K
    dadt += per_row
    dscale += per_row
    dgamma += per_row
    dv_flags += per_chunk
    r = tl.arange(0, BT)
    causal = r[None, :] <= r[:, None]
    below = r[None, :] < r[:, None]
    diagonal = r[None, :] == r[:, None]
    t, rm, g, rows, gamma, scale, la, la_last = chunk_gates(adt, dt, trap, c, b, bh, T, BT)
    pm, first, second, qe, qo, ke, ko = load_halves_pair(qr, kr, rows, rm, H, h, K, j, jm)
    v_off, tm, vt, dy = _value_tiles(v, dout, rows, rm, H, h, V, cv, vm)
    if HAS_Z:
        zt = tl.load(z + v_off, mask=tm, other=0.0).to(tl.float32)
        dy = dy * (zt * sigmoid(zt))
    qk = mm(qe, tl.trans(ke), DT) + mm(qo, tl.trans(ko), DT)
    decay = tl.exp(tl.where(causal, la[:, None] - la[None, :], 0.0).to(tl.float32))
    weight = tl.where(diagonal, gamma[None, :], scale[None, :])
    P = tl.where(causal, qk * decay * weight, 0.0)
    dP = mm(dy, tl.trans(vt), DT)
    dQK = tl.where(causal, dP * decay * weight, 0.0)
    Gm = qk * decay * dP
    _add_to(dscale, dscale, g, rm, tl.sum(tl.where(below, Gm, 0.0), 0))
    tl.store(dgamma + g, tl.sum(tl.where(diagonal, Gm, 0.0), 0), mask=rm)
    _add_to(dadt, dadt, g, rm, rectangle_sums(tl.where(below, dP * P, 0.0), BT))
    dvt = _add_to(dv_state, dv, v_off, tm, mm(tl.trans(P), dy, DT))
    store_flag(dv_flags, bh * tl.cdiv(T, BT) + c, count_nonfinite(dvt, tm))
    _add_to(dqr, dqr, first, pm, mm(dQK, ke, DT))
    _add_to(dqr, dqr, second, pm, mm(dQK, ko, DT))
    _add_to(dkr, dkr, first, pm, mm(tl.trans(dQK), qe, DT))
    _add_to(dkr, dkr, second, pm, mm(tl.trans(dQK), qo, DT))


@triton.jit
def rotate_bwd_kernel(q, k, phase, q_bias, k_bias, dqr, dkr, dq, dk, dtheta, qk_flags,
                      T, H, G, K, A, BT: tl.constexpr, BK2: tl.constexpr):
    """Grid (blocks of BT rows, H, B): the chunk kernels' dq', dk' (dqr, dkr, halves) turned
    back into dq, dk [B, T, H, K] (of q + q_bias, k + k_bias, per head, in dq's dtype),
    and the phase gradients dtheta [B, T, H, A], from q' and k' formed again in fp32 from
    the stored phases (as chunk_keys forms them everywhere); qk_flags [B * H * blocks] (store_flag's, of the
    block's dq and dk)."""
    c, h, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    j, jm = pair_offsets(K, BK2)
    am = j < A
    qbe, qbo = load_halves(q_bias, h * K, j, jm)
    kbe, kbo = load_halves(k_bias, h * K, j, jm)
    t = c * BT + tl.arange(0, BT)
    rm = t < T
    rows = b.to(tl.int64) * T + t
    cos, sin, qe, qo, ke, ko = chunk_keys(q, k, phase_tile(phase, rows, rm, H, h, A, j, am),
                                          rows, rm, H // G, h // G, K, j, jm, am,
                                          qbe, qbo, kbe, kbo)
    pm, _, _, dqe, dqo, dke, dko = load_halves_pair(dqr, dkr, rows, rm, H, h, K, j, jm)
    dqe, dqo = dqe.to(tl.float32), dqo.to(tl.float32)
    dke, dko = dke.to(tl.float32), dko.to(tl.float32)
    dtheta_t = -dqe * qo + dqo * qe - dke * ko + dko * ke
    tl.store(dtheta + (rows[:, None] * H + h) * A + j[None, :], dtheta_t,
             mask=rm[:, None] & am[None, :])
    d_off = ((rows * H + h) * K)[:, None]
    dq0 = tl.where(am[None, :], dqe * cos + dqo * sin, dqe)
    dq1 = tl.where(am[None, :], dqo * cos - dqe * sin, dqo)
    dk0 = tl.where(am[None, :], dke * cos + dko * sin, dke)
    dk1 = tl.where(am[None, :], dko * cos - dke * sin, dko)
    store_pair_rows(dq, d_off, rm, K, dq0, dq1)
    store_pair_rows(dk, d_off, rm, K, dk0, dk1)
    store_flag(qk_flags, (b * H + h) * tl.cdiv(T, BT) + c,
               count_nonfinite(dq0, pm) + count_nonfinite(dq1, pm)
               + count_nonfinite(dk0, pm) + count_nonfinite(dk1, pm))


@triton.jit
def head_sums_kernel(dh, out, partial, T, H, G, K, BT: tl.constexpr, BK: tl.constexpr):
    """Grid (blocks of BT rows, H // G, B). dh [B, T, H, K], a gradient per head (of
    q + q_bias or k + k_bias): the G heads of key head hq summed in order into out [B, T,
    H // G, K] (its dtype), and each head's BT rows into partial [B, blocks, H, K] fp32 (the
    bias's gradient, once the blocks are summed). One read of dh for both sums."""
    c, hq, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    t = c * BT + tl.arange(0, BT)
    kk = tl.arange(0, BK)
    km = kk < K
    m = (t < T)[:, None] & km[None, :]
    rows = b.to(tl.int64) * T + t
    block = b.to(tl.int64) * tl.cdiv(T, BT) + c
    acc = tl.zeros([BT, BK], dtype=tl.float32)
    for g in range(0, G):
        h = hq * G + g
        x = tl.load(dh + ((rows * H + h) * K)[:, None] + kk[None, :], mask=m,
                    other=0.0).to(tl.float32)
        acc += x
        tl.store(partial + (block * H + h) * K + kk, tl.sum(x, axis=0), mask=km)
    tl.store(out + ((rows * (H // G) + hq) * K)[:, None] + kk[None, :],
             acc.to(out.dtype.element_ty), mask=m)


def head_sums(dh: torch.Tensor, G: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """head_sums_kernel on dh [B, T, H, K]: (the sum over each key head's G heads [B, T,
    H // G, K] in `dtype`, the sum over the batch and the sequence [H, K] fp32)."""
    B, T, H, K = dh.shape
    out = torch.empty(B, T, H // G, K, dtype=dtype, device=dh.device)
    partial = torch.empty(B, triton.cdiv(T, HEAD_SUM_ROWS), H, K, dtype=torch.float32,
                          device=dh.device)
    head_sums_kernel[(triton.cdiv(T, HEAD_SUM_ROWS), H // G, B)](
        dh, out, partial, T, H, G, K, BT=HEAD_SUM_ROWS, BK=triton.next_power_of_2(K),
        num_warps=4)
    return out, partial.sum((0, 1))  # a fixed order: deterministic


@triton.jit
def gates_bwd_kernel(dt, trap, angles, dtheta, dthetaT, dscale, dgamma, dprev0,
                     ddt, dtrap, dangles, dtheta0, T, H, A,
                     BT: tl.constexpr, BA: tl.constexpr):
    """Grid (H, B). dtheta [B, T, H, A] (rotate_bwd_kernel's), dthetaT [B, H, A] the final
    phase's cotangent, dscale, dgamma [B, H, T], dprev0 [B * H]. Writes ddt, dtrap [B, H, T],
    dangles [B, T, H, A] and dtheta0 [B, H, A], fp32."""
    h, b = tl.program_id(0), tl.program_id(1)
    bh = b.to(tl.int64) * H + h
    a = tl.arange(0, BA)
    am = a < A
    r = tl.arange(0, BT)
    carry = tl.load(dthetaT + bh * A + a, mask=am, other=0.0).to(tl.float32)
    d_prev0 = tl.load(dprev0 + bh)
    NC = tl.cdiv(T, BT)
    for i in range(0, NC):
        c = NC - 1 - i
        t = c * BT + r
        rm = t < T
        g = bh * T + t
        rows = b.to(tl.int64) * T + t
        offs = (rows[:, None] * H + h) * A + a[None, :]
        tm = rm[:, None] & am[None, :]
        dth = tl.load(dtheta + offs, mask=tm, other=0.0)
        # the gradient of each step of the running sum: every later phase's, and the final's
        dstep = tl.cumsum(dth, 0, reverse=True) + carry[None, :]
        carry += tl.sum(dth, 0)
        dt_r = tl.load(dt + g, mask=rm, other=0.0).to(tl.float32)
        tnh = tanh64(tl.load(angles + offs, mask=tm, other=0.0)).to(tl.float32)
        tl.store(dangles + offs, dstep * PI * (1 - tnh * tnh) * dt_r[:, None], mask=tm)
        ddt_phase = tl.sum(tl.where(tm, dstep * PI * tnh, 0.0), 1)
        lam = sigmoid(tl.load(trap + g, mask=rm, other=0.0).to(tl.float32))
        own = tl.load(dgamma + g, mask=rm, other=0.0) + tl.load(dscale + g, mask=rm, other=0.0)
        # this token's (1 - lam) dt: in the previous token's scale, or prev0 at the first
        before = tl.where(t == 0, d_prev0,
                          tl.load(dscale + g - 1, mask=rm & (t > 0), other=0.0))
        dlam = own * dt_r - before * dt_r
        tl.store(ddt + g, own * lam + before * (1 - lam) + ddt_phase, mask=rm)
        tl.store(dtrap + g, dlam * lam * (1 - lam), mask=rm)
    tl.store(dtheta0 + bh * A + a, carry, mask=am)


class HeadGradients(NamedTuple):
    """The backward's results per head, before the sums over the batch (the biases, D) and
    over the heads that share a key head: what the chunk kernels and gates_bwd_kernel write,
    and what the token-by-token fallback (recurrent.recurrent_backward) overwrites; fp32
    but for dq, dk [B, T, H, K] (of q + q_bias, k + k_bias: forward.saved_dtype's, as the
    reference's per-head gradients are rounded to the working dtype before their sums over
    the heads and the batch) and dv, dz [B, T, H, V] (v's and z's dtypes: each summed in
    fp32 and rounded once as it is stored, the rounding of the result's cast), then dadt,
    ddt, dtrap
    [B, H, T], dangles [B, T, H, A], dD [B * H] (each sequence's share), then the initial
    states' gradients as reference.States."""
    dq: torch.Tensor
    dk: torch.Tensor
    dv: torch.Tensor
    dz: torch.Tensor
    dadt: torch.Tensor
    ddt: torch.Tensor
    dtrap: torch.Tensor
    dangles: torch.Tensor
    dD: torch.Tensor
    dtheta0: torch.Tensor
    dS0: torch.Tensor
    dk0: torch.Tensor
    dv0: torch.Tensor


class Mamba3SISOFunction(torch.autograd.Function):
    """forward.mamba3_siso_forward with this module's backward. Inputs: reference.
    mamba3_siso_recurrence's, the four initial states, then chunk_size."""

    @staticmethod
    def forward(ctx, q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, theta0, S0, k0, v0,
                chunk_size):
        args = [x.contiguous() if x is not None else None
                for x in (q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z)]
        states = States(*(s.contiguous() for s in (theta0, S0, k0, v0)))
        out, final, saved = mamba3_siso_forward(*args, states, chunk_size=chunk_size,
                                                store=True)
        ctx.save_for_backward(*[x if x is not None else torch.empty(0) for x in args],
                              *states, *saved)
        ctx.has = (D is not None, z is not None)
        ctx.chunk_size = chunk_size
        return (out, *final)

    @staticmethod
    def backward(ctx, dout, dthetaT, dST, dkT, dvT):
        (q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, theta0, S0, k0, v0,
         *saved) = ctx.saved_tensors
        saved = Saved(*saved)
        has_d, has_z = ctx.has
        D = D if has_d else None
        z = z if has_z else None
        B, T, Hq, K = q.shape
        H, V, A = v.shape[2], v.shape[3], angles.shape[-1]
        cot = [torch.zeros_like(x) if c is None else c.contiguous()
               for c, x in ((dout, v), (dthetaT, theta0), (dST, S0), (dkT, k0), (dvT, v0))]
        f32 = dict(dtype=torch.float32, device=q.device)
        kept = dict(dtype=saved_dtype(q.dtype), device=q.device)
        grads = HeadGradients(
            *(torch.empty(B, T, H, K, **kept) for _ in range(2)),
            *(torch.empty(B, T, H, V, dtype=x.dtype, device=q.device)
              for x in (v, z if has_z else v)),
            *(torch.empty(B, H, T, **f32) for _ in range(3)), torch.empty(B, T, H, A, **f32),
            torch.empty(B * H, **f32), *(torch.empty(x.shape, **f32) for x in (theta0, S0, k0, v0)))
        dtheta = torch.empty(B, T, H, A, **f32)
        dscale, dgamma = (torch.empty(B, H, T, **f32) for _ in range(2))
        C = ctx.chunk_size
        NC = triton.cdiv(T, C)
        dhbuf = torch.empty(B * H, NC, V, K, **kept)
        dDc = torch.empty(B * H * NC, **f32)
        dqr, dkr = (torch.empty(B, T, H, K, **kept) for _ in range(2))
        BK2, BV = pair_block(K), max(16, triton.next_power_of_2(V))
        # the chunk kernels' V-blocks, each with its slice of the shares of the sums over V
        BVC = min(BV, CHUNK_BLOCK_V)
        NVC = triton.cdiv(V, BVC)
        totals = (dqr, dkr, grads.dadt, dscale, dgamma, dDc)
        shares = [_shares(x, NVC) for x in totals]
        BVS = min(BV, STATE_BLOCK_V or BV)
        NVS = triton.cdiv(V, BVS)
        dk0_shares = torch.empty(B * H, NVS, K, **f32)
        dprev0_shares = torch.empty(B * H, NVS, **f32)
        state_bwd_kernel[(NVS, H, B)](
            saved.qr, v, adt, dt, trap, z, k0, v0, cot[0], cot[2], dhbuf, grads.dS0, dk0_shares,
            grads.dv0, dprev0_shares, T, H, K, V, BT=C, BK2=BK2, BV=BVS, HAS_Z=has_z,
            **launch("state", q.dtype))
        # the V-blocks' shares summed in a fixed order: deterministic
        torch.sum(dk0_shares, 1, out=grads.dk0.view(B * H, K))
        dprev0 = dprev0_shares.sum(1)
        # store_flag's flags of the large gradients, each set where it is formed: reading
        # them again for the fallback's decision moved 1.6 GB at the paper's 16 x 2048
        dz_flags, dv_flags = (torch.empty(NVC * B * H * NC, **f32) for _ in range(2))
        dv_state = torch.empty(B, T, H, V, **f32)
        qk_flags = torch.empty(B * H * triton.cdiv(T, ROTATE_ROWS), **f32)
        dqr_v, dkr_v, dadt_v, dscale_v, dgamma_v, dDc_v = shares
        chunk_state_bwd_kernel[(NC * NVC, H, B)](
            saved.qr, saved.kr, v, adt, dt, trap, D, z, saved.hbuf, dhbuf, saved.ybuf, cot[0],
            cot[3], cot[4], dqr_v, dkr_v, dv_state, grads.dz, dadt_v, dscale_v, dDc_v,
            dz_flags, T, H, K, V,
            BT=C, BK2=BK2, BV=BVC, HAS_D=has_d, HAS_Z=has_z, **launch("backward", q.dtype))
        chunk_intra_bwd_kernel[(NC * NVC, H, B)](
            saved.qr, saved.kr, v, adt, dt, trap, z, cot[0], dqr_v, dkr_v, dv_state, grads.dv,
            dadt_v, dscale_v, dgamma_v, dv_flags, T, H, K, V, BT=C, BK2=BK2, BV=BVC,
            HAS_Z=has_z, **launch("backward", q.dtype))
        if NVC > 1:
            for share, total in zip(shares, totals):
                torch.sum(share, 0, out=total)  # a fixed order: deterministic
        rotate_bwd_kernel[(triton.cdiv(T, ROTATE_ROWS), H, B)](
            q, k, saved.phase, q_bias, k_bias, dqr, dkr, grads.dq, grads.dk, dtheta, qk_flags,
            T, H, H // Hq, K, A, BT=ROTATE_ROWS, BK2=BK2, num_warps=ROTATE_WARPS)
        torch.sum(dDc.view(B * H, NC), 1, out=grads.dD)  # a fixed order: deterministic
        gates_bwd_kernel[(H, B)](dt, trap, angles, dtheta, cot[1], dscale, dgamma, dprev0,
                                 grads.ddt, grads.dtrap, grads.dangles, grads.dtheta0, T, H, A,
                                 BT=ctx.chunk_size, BA=max(16, triton.next_power_of_2(A)),
                                 num_warps=4)
        # decided on the device, as the forward's: the forward fell back, or a chunked
        # gradient is not finite (dq, dk, dv and dz by their kernels' flags; dz is not written
        # without z)
        checked = (qk_flags, dv_flags, dz_flags if has_z else None, grads.dadt, grads.ddt,
                   grads.dtrap, grads.dangles, grads.dD, grads.dtheta0, grads.dS0, grads.dk0,
                   grads.dv0)
        recurrent_backward(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z,
                           States(theta0, S0, k0, v0), saved.phase, cot, grads,
                           ctx.chunk_size, when=saved.fallback | fallback_flag(*checked))
        dq, dq_bias = head_sums(grads.dq, H // Hq, q.dtype)
        dk, dk_bias = head_sums(grads.dk, H // Hq, k.dtype)
        inputs = (q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, theta0, S0, k0, v0)
        result = (dq, dk, grads.dv, grads.dadt, grads.ddt, grads.dtrap, dq_bias, dk_bias,
                  grads.dangles,
                  grads.dD.view(B, H).sum(0) if has_d else None, grads.dz if has_z else None,
                  grads.dtheta0, grads.dS0, grads.dk0, grads.dv0)
        return (*(None if g is None else g.to(x.dtype) for g, x in zip(result, inputs)), None)


def mamba3_siso(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, states: States,
                chunk_size: int = CHUNK) -> tuple[torch.Tensor, States]:
    """Differentiable forward.mamba3_siso_forward (this module's backward)."""
    out, *final = Mamba3SISOFunction.apply(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D,
                                           z, *states, chunk_size)
    return out, States(*final)
