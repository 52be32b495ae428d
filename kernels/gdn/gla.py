"""Chunked GLA (per-channel gate g [B, T, H, K], no delta rule), forward and training backward:

    S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T,   o_t = scale S_t^T q_t

Chunks of C = 16 or 64 tokens, cut into sub-chunks of 16; gc = the chunk-local cumulative
log-decay per channel (fp64). Within a chunk with initial state S:

    O      = scale (Q * exp(gc)) S + P V,
    P_rs   = scale sum_c q_rc k_sc exp(gc_rc - gc_sc)   (s <= r)
    S_next = exp(gc_last) * S + (K * exp(gc_last - gc))^T V

P by 16 x 16 blocks (i the query sub-chunk, j the key sub-chunk):
  - diagonal blocks pair by pair ([16, 16, K] elementwise, every exponent gc_rc - gc_sc <= 0
    for s <= r and selected to 0 elsewhere: tile_ops.pair_decays);
  - off-diagonal blocks (j < i) as one product (Q_i * exp(gc - ref_i)) (K_j * exp(ref_i - gc))^T,
    ref_i = gc at the first row of sub-chunk i (tile_ops.query_factor, key_factor).
Exponent argument: g <= 0, so gc is non-increasing along the chunk. For r in sub-chunk i and
s in j < i, s < row0_i <= r, hence gc_r <= ref_i <= gc_s: both exponents gc_r - ref_i and
ref_i - gc_s are <= 0, each factor is in (0, 1] and at least the exact decay exp(gc_r - gc_s)
(each exponent's magnitude is at most |gc_r - gc_s|), so nothing overflows and nothing
underflows that the exact decay does not. As computed, gc is an fp64 scan whose partial sums
may be associated differently from row to row, so two rows whose exact sums are equal (a
decay of exactly 1 between them) can come out in the wrong order by the scan's rounding,
at most ~log2(C) 2^-53 |gc|: an exponent can then be that small positive number, a factor
1 + 10^-15 |gc| rather than 1; an fp32 exp overflows only above 88.7. Every other exp formed is <= 0 as well:
exp(gc) (Q S), exp(gc_last - gc) and exp(gc_last) (the scans), the pair decays; invalid rows
and columns are selected to exponent 0 before the exp, never to a positive one. The
factored form over a whole chunk, (Q exp(gc)) (K exp(-gc))^T, is never formed: exp(-gc)
overflows after a strong gate (gc < -88 in fp32).

Backward (dS the gradient of the chunk-end state, D = scale mask * (dO V^T), E_rsc the pair decays):
    dV      = P^T dO + (K * exp(gc_last - gc)) dS       (P^T dO by gla_local_dv_kernel)
    dS_prev = exp(gc_last) * dS + scale (Q * exp(gc))^T dO
    dQ      = scale exp(gc) * (dO S^T) + sum_s D_rs k_s * E_rs
    dK      = sum_r D_rs q_r * E_rs + exp(gc_last - gc) * (V dS^T)
    dg_jc   = the terms whose decay carries g_jc (as output.grad_qk_kernel, per channel):
              Q S for r >= j, P for s < j <= r (a rectangle sum per channel, by sub-chunk
              blocks: gla_grad_scores_kernel), K^T V for r < j, the carried state for every j.
The D-terms of dq, dk use the same blocks: pair by pair on the diagonal, the factored tiles
off it (dq_i gains exp(gc_i - ref_i) * (D_i,<i (K_<i exp(ref_i - gc))), dk_j gains
exp(ref_i - gc_j) * (D_ij^T (Q_i exp(gc_i - ref_i))) for every i > j).

KDA (per-channel gate with the delta rule) runs the same kernels with DELTA: the WY stage
(kda.py) gives W and Utld, the forward scan forms the corrected values U = Utld - W S and the
output and grad_qk kernels read U where GLA reads V; the backward scan's dV is then dU, and
dS_prev gains -W^T dU. kda.py's WY VJP and gla_grad_scores_kernel once more, on L (the
scores with q = beta k, D = dL), finish dk, dv, dbeta, dg.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kdiff.kernels.gdn.host import block_sizes, chunk_cumsum, launch_options, states
from kdiff.kernels.gdn.jit import shape_jit
from kdiff.kernels.gdn.kda import kda_wy_backward, kda_wy_forward
from kdiff.kernels.gdn.tile_ops import (
    SUB_CHUNK,
    channel_rectangle_sums,
    chunk_rows,
    chunk_span,
    exclusive_cumsum_rows,
    initial_state,
    key_factor,
    keys_before,
    load_gate_rows,
    load_rows,
    load_state,
    mm,
    pair_decays,
    query_factor,
    scan_program,
    state_tile,
    store_rows,
    store_state,
    sub_chunk,
)
from kdiff.kernels.gdn.varlen import ChunkLayout

GLA_CHUNK = 64  # chunks of 16 also supported (chunk_gla(chunk_size=16))
# not tuned on a GPU: the [16, 16, BK] pair tensors want more warps than the GDN kernels
STATE_BV, PARALLEL_BV = 32, 64
WARPS = {"gla_state_fwd": 4, "gla_output_fwd": 8, "gla_local_dv": 8, "gla_state_bwd": 8,
         "gla_grad_qk": 8, "gla_grad_scores": 8}
WARPS["kda_state_fwd"], WARPS["kda_state_bwd"] = WARPS["gla_state_fwd"], WARPS["gla_state_bwd"]
# chunks of 64 (sm_90 compile, K = V = 128, bf16): the forward scan's [64, BK] fp64 gate tile
# spills with 4 warps, and the backward scan's default 3 pipeline stages want 234 KB of shared
# memory (> 227 KB); 2 stages want 133 KB. With the delta rule (KDA) the forward scan's W
# tile takes its 3 stages to 238 KB
WARPS_CHUNK64 = {**WARPS, "gla_state_fwd": 8, "kda_state_fwd": 8}
STAGES_CHUNK64 = {"gla_state_bwd": 2, "kda_state_fwd": 2, "kda_state_bwd": 2}


def launch(kernel: str, chunk: int, dtype: torch.dtype) -> dict:
    if chunk == 64:
        return launch_options(WARPS_CHUNK64[kernel], dtype, STAGES_CHUNK64.get(kernel))
    return launch_options(WARPS[kernel], dtype)


@shape_jit
def gla_state_fwd_kernel(k, w, v, gc, h0, hbuf, vnew, ht, cu_seqlens, chunk_offsets, H, K, V,
                         BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                         HAS_H0: tl.constexpr, STORE_FINAL: tl.constexpr, DELTA: tl.constexpr):
    """DELTA (KDA): v is the WY stage's Utld, and the chunk's corrected values
    U = Utld - W S are stored to vnew and enter the state in place of V (as
    state.state_fwd_kernel); without it w and vnew are not touched."""
    i_v = tl.program_id(0)
    i_nh, h, bos, eos, first_chunk = scan_program(cu_seqlens, chunk_offsets, H)
    DT: tl.constexpr = k.dtype.element_ty
    _, _, soffs, smask = state_tile(K, V, i_v, BK, BV)
    S = initial_state(h0, i_nh, K, V, soffs, smask, BK, BV, HAS_H0)
    for c in range(tl.cdiv(eos - bos, BT)):
        start, end = chunk_span(bos, eos, c, BT)
        store_state(hbuf, (first_chunk + c) * H + h, S, K, V, soffs, smask)
        b_gc, g_last = load_gate_rows(gc, start, end, H, h, K, BT, BK)
        valid = start + tl.arange(0, BT) < end
        to_end = tl.where(valid[:, None], tl.exp((g_last[None, :] - b_gc).to(tl.float32)), 0.0)
        b_k = load_rows(k, start, end, H, h, K, 0, BT, BK).to(tl.float32)
        b_v = load_rows(v, start, end, H, h, V, i_v * BV, BT, BV)
        if DELTA:
            b_v = b_v.to(tl.float32) - mm(load_rows(w, start, end, H, h, K, 0, BT, BK), S, DT)
            store_rows(vnew, b_v, start, end, H, h, V, i_v * BV, BT, BV)
        S = S * tl.exp(g_last.to(tl.float32))[:, None] + mm(tl.trans(b_k * to_end), b_v, DT)
    if STORE_FINAL:
        store_state(ht, i_nh, S, K, V, soffs, smask)


@triton.jit
def _sub_chunk_program(bounds, i_cs, NS: tl.constexpr, BT: tl.constexpr):
    """A sub-chunk program's chunk index, sub-chunk index and the chunk's span [start, end)
    (grid axis i_cs = chunks * NS)."""
    i_c = i_cs // NS
    start, end, _, _ = chunk_rows(bounds, i_c, BT)
    return i_c, i_cs % NS, start, end


@triton.jit
def diag_scores(b_q, b_k, b_gc, valid, BC: tl.constexpr):
    """A diagonal block of scores, pair by pair: sum_c q_rc k_sc exp(gc_rc - gc_sc), s <= r."""
    return tl.sum(b_q[:, None, :] * b_k[None, :, :] * pair_decays(b_gc, valid, BC), 2)


@shape_jit
def gla_output_fwd_kernel(q, k, v, gc, hbuf, o, bounds, scale, H, K, V, BT: tl.constexpr,
                          BK: tl.constexpr, BV: tl.constexpr, BC: tl.constexpr):
    """O for the rows of one sub-chunk i: scale (Q_i exp(gc_i)) S + P_ii V_i (pair by pair)
    + P_i,<i V_<i, the scores against all earlier sub-chunks of the chunk as one product
    (Q_i exp(gc_i - ref)) (K_<i exp(ref - gc_<i))^T. Grid (V/BV, chunks * BT/BC, H)."""
    NS: tl.constexpr = BT // BC
    i_v, i_cs, h = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    i_c, i, start, end = _sub_chunk_program(bounds, i_cs, NS, BT)
    DT: tl.constexpr = q.dtype.element_ty
    if start + i * BC < end:  # a sub-chunk wholly past the end has no rows
        _, _, soffs, smask = state_tile(K, V, i_v, BK, BV)
        S = load_state(hbuf, i_c * H + h, K, V, soffs, smask)
        row0, valid, b_gc, ref = sub_chunk(gc, start, end, i, H, h, K, BC, BK)
        b_q = load_rows(q, row0, end, H, h, K, 0, BC, BK).to(tl.float32)
        b_k = load_rows(k, row0, end, H, h, K, 0, BC, BK).to(tl.float32)
        b_o = mm(b_q * tl.exp(b_gc.to(tl.float32)) * scale, S, DT)
        b_p = diag_scores(b_q, b_k, b_gc, valid, BC) * scale
        b_o += mm(b_p, load_rows(v, row0, end, H, h, V, i_v * BV, BC, BV), DT)
        if NS > 1:
            kend = tl.minimum(row0, end)
            b_kg = keys_before(k, gc, start, kend, ref, H, h, K, BT, BK)
            b_p = mm(b_q * query_factor(b_gc, ref, valid), tl.trans(b_kg), DT) * scale
            b_o += mm(b_p, load_rows(v, start, kend, H, h, V, i_v * BV, BT, BV), DT)
        store_rows(o, b_o, row0, end, H, h, V, i_v * BV, BC, BV)


@shape_jit
def gla_local_dv_kernel(q, k, gc, do, dv_local, bounds, scale, H, K, V, BT: tl.constexpr,
                        BK: tl.constexpr, BV: tl.constexpr, BC: tl.constexpr):
    """The intra-chunk part of dV (of dU with the delta rule), P^T dO, for the rows of one
    sub-chunk j, off the backward scan's critical path: P_jj pair by pair, and for each later
    sub-chunk i the block P_ij as one product (Q_i exp(gc_i - ref_i)) (K_j exp(ref_i - gc_j))^T.
    Grid (V/BV, chunks * BT/BC, H); fp32 out."""
    NS: tl.constexpr = BT // BC
    i_v, i_cs, h = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    _, j, start, end = _sub_chunk_program(bounds, i_cs, NS, BT)
    DT: tl.constexpr = q.dtype.element_ty
    if start + j * BC < end:  # a sub-chunk wholly past the end has no rows
        row0, valid, b_gc, _ref = sub_chunk(gc, start, end, j, H, h, K, BC, BK)
        b_q = load_rows(q, row0, end, H, h, K, 0, BC, BK).to(tl.float32)
        b_k = load_rows(k, row0, end, H, h, K, 0, BC, BK).to(tl.float32)
        b_p = diag_scores(b_q, b_k, b_gc, valid, BC) * scale
        b_dv = mm(tl.trans(b_p), load_rows(do, row0, end, H, h, V, i_v * BV, BC, BV), DT)
        for i in range(j + 1, tl.cdiv(end - start, BC)):
            row0_i, valid_i, gc_i, ref_i = sub_chunk(gc, start, end, i, H, h, K, BC, BK)
            b_qg = (load_rows(q, row0_i, end, H, h, K, 0, BC, BK).to(tl.float32)
                    * query_factor(gc_i, ref_i, valid_i))
            b_p = mm(b_qg, tl.trans(b_k * key_factor(b_gc, ref_i, valid)), DT) * scale
            b_dv += mm(tl.trans(b_p), load_rows(do, row0_i, end, H, h, V, i_v * BV, BC, BV), DT)
        store_rows(dv_local, b_dv, row0, end, H, h, V, i_v * BV, BC, BV)


@shape_jit
def gla_state_bwd_kernel(q, k, w, gc, do, dv_local, dv, dht, dh0, dhbuf, cu_seqlens,
                         chunk_offsets, scale, H, K, V, BT: tl.constexpr, BK: tl.constexpr,
                         BV: tl.constexpr, HAS_DHT: tl.constexpr, STORE_DH0: tl.constexpr,
                         DELTA: tl.constexpr):
    """Reverse scan; stores dS at every chunk end and dV = P^T dO (dv_local, from
    gla_local_dv_kernel) + (K exp(gc_last - gc)) dS. DELTA (KDA): that is dU, the gradient of
    the corrected values, and U = Utld - W S adds -W^T dU to dS_prev (as
    state.state_bwd_kernel)."""
    i_v = tl.program_id(0)
    i_nh, h, bos, eos, first_chunk = scan_program(cu_seqlens, chunk_offsets, H)
    DT: tl.constexpr = k.dtype.element_ty
    _, _, soffs, smask = state_tile(K, V, i_v, BK, BV)
    dS = initial_state(dht, i_nh, K, V, soffs, smask, BK, BV, HAS_DHT)
    num_chunks = tl.cdiv(eos - bos, BT)
    for i in range(num_chunks):
        c = num_chunks - 1 - i
        start, end = chunk_span(bos, eos, c, BT)
        valid = start + tl.arange(0, BT) < end
        store_state(dhbuf, (first_chunk + c) * H + h, dS, K, V, soffs, smask)
        b_q = load_rows(q, start, end, H, h, K, 0, BT, BK).to(tl.float32)
        b_k = load_rows(k, start, end, H, h, K, 0, BT, BK).to(tl.float32)
        b_do = load_rows(do, start, end, H, h, V, i_v * BV, BT, BV)
        b_gc, g_last = load_gate_rows(gc, start, end, H, h, K, BT, BK)
        to_end = tl.where(valid[:, None], tl.exp((g_last[None, :] - b_gc).to(tl.float32)), 0.0)
        b_dv = (load_rows(dv_local, start, end, H, h, V, i_v * BV, BT, BV)
                + mm(b_k * to_end, dS, DT))
        store_rows(dv, b_dv, start, end, H, h, V, i_v * BV, BT, BV)
        b_qg = b_q * tl.exp(b_gc.to(tl.float32)) * scale
        dS = dS * tl.exp(g_last.to(tl.float32))[:, None] + mm(tl.trans(b_qg), b_do, DT)
        if DELTA:
            dS -= mm(tl.trans(load_rows(w, start, end, H, h, K, 0, BT, BK)), b_dv, DT)
    if STORE_DH0:
        store_state(dh0, i_nh, dS, K, V, soffs, smask)


@shape_jit
def gla_grad_qk_kernel(q, k, v, gc, hbuf, dhbuf, do, dq_part, dk_part, dg_part, dp_buf, bounds,
                       scale, H, K, V, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    """The state and chunk-end parts of dq, dk, dg (fp32), and D = scale mask * (dO V^T)
    ([tokens, H, BT] fp32) for gla_grad_scores_kernel. Grid (chunks, H)."""
    i_c, h = tl.program_id(0), tl.program_id(1)
    start, end, r, valid = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = q.dtype.element_ty
    rk = tl.arange(0, BK)
    state_base = (i_c.to(tl.int64) * H + h) * K * V
    b_gc, g_last = load_gate_rows(gc, start, end, H, h, K, BT, BK)
    to_end = tl.where(valid[:, None], tl.exp((g_last[None, :] - b_gc).to(tl.float32)), 0.0)
    dq_state = tl.zeros([BT, BK], dtype=tl.float32)  # dO S^T (decay applied after)
    vds = tl.zeros([BT, BK], dtype=tl.float32)       # V dS_next^T
    dp = tl.zeros([BT, BT], dtype=tl.float32)        # dO V^T
    ds_dot = tl.zeros([BK], dtype=tl.float32)        # row sums of S * dS_next
    for i_v in range(tl.cdiv(V, BV)):
        # not state_tile/load_state (as grad_qk_kernel): with them this kernel's sm_90 bf16
        # compile gains stack, 0 -> 16 B at C = 64 and 288 -> 368 B at C = 16
        cv = i_v * BV + tl.arange(0, BV)
        soffs = state_base + rk[:, None] * V + cv[None, :]
        smask = (rk < K)[:, None] & (cv < V)[None, :]
        S = tl.load(hbuf + soffs, mask=smask, other=0.0)
        dS = tl.load(dhbuf + soffs, mask=smask, other=0.0)
        b_v = load_rows(v, start, end, H, h, V, i_v * BV, BT, BV)
        b_do = load_rows(do, start, end, H, h, V, i_v * BV, BT, BV)
        dq_state += mm(b_do, tl.trans(S), DT)
        vds += mm(b_v, tl.trans(dS), DT)
        dp += mm(b_do, tl.trans(b_v), DT)
        ds_dot += tl.sum(S.to(tl.float32) * dS.to(tl.float32), 1)
    dq_state = dq_state * tl.exp(b_gc.to(tl.float32)) * scale
    dk_d = vds * to_end
    causal = (r[:, None] >= r[None, :]) & valid[:, None] & valid[None, :]
    store_rows(dp_buf, tl.where(causal, dp, 0.0) * scale, start, end, H, h, BT, 0, BT, BT)
    b_q = load_rows(q, start, end, H, h, K, 0, BT, BK).to(tl.float32)
    b_k = load_rows(k, start, end, H, h, K, 0, BT, BK).to(tl.float32)
    # log-gate derivative per channel, each term collected only where its decay carries g_jc
    b_dg = tl.cumsum(b_q * dq_state, 0, reverse=True)                  # Q S: r >= j
    b_dg += exclusive_cumsum_rows(b_k * dk_d)                          # K^T V: r < j
    b_dg += tl.where(valid[:, None], (tl.exp(g_last.to(tl.float32)) * ds_dot)[None, :], 0.0)
    store_rows(dq_part, dq_state, start, end, H, h, K, 0, BT, BK)
    store_rows(dk_part, dk_d, start, end, H, h, K, 0, BT, BK)
    store_rows(dg_part, b_dg, start, end, H, h, K, 0, BT, BK)


@shape_jit
def gla_grad_scores_kernel(q, k, gc, dp_buf, dq_part, dk_part, dq, dk, dg, bounds, H, K,
                           BT: tl.constexpr, BK: tl.constexpr, BC: tl.constexpr):
    """The score parts of dq, dk and dg for the rows of one sub-chunk b, added to the
    partials of gla_grad_qk_kernel (dg in place). With Z_rsc = D_rs q_rc k_sc exp(gc_rc -
    gc_sc), dg_jc gains sum_{s < j <= r} Z_rsc, split by where r and s lie for j in b:
    both in b (a rectangle sum, pair by pair); r in b, s before b (a reverse cumsum in b of
    q * dq_off); r after b, s in b (an exclusive cumsum in b of k * dk_off); r after b, s
    before b (the same for every j of b: `spanned`). Every term summed carries g_jc.
    Grid (chunks * BT/BC, H)."""
    NS: tl.constexpr = BT // BC
    i_cs, h = tl.program_id(0), tl.program_id(1)
    _, b, start, end = _sub_chunk_program(bounds, i_cs, NS, BT)
    DT: tl.constexpr = k.dtype.element_ty  # KDA's L passes q = beta k in fp32
    if start + b * BC < end:  # a sub-chunk wholly past the end has no rows
        row0, valid, b_gc, ref = sub_chunk(gc, start, end, b, H, h, K, BC, BK)
        b_q = load_rows(q, row0, end, H, h, K, 0, BC, BK).to(tl.float32)
        b_k = load_rows(k, row0, end, H, h, K, 0, BC, BK).to(tl.float32)
        d_p = load_rows(dp_buf, row0, end, H, h, BT, b * BC, BC, BC)     # the diagonal block
        pair = pair_decays(b_gc, valid, BC)                               # [r, s, c]
        z_q = d_p[:, :, None] * pair * b_k[None, :, :]                    # D_rs k_sc E_rsc
        b_dq = load_rows(dq_part, row0, end, H, h, K, 0, BC, BK) + tl.sum(z_q, 1)
        b_dk = (load_rows(dk_part, row0, end, H, h, K, 0, BC, BK)
                + tl.sum(d_p[:, :, None] * pair * b_q[:, None, :], 0))
        b_dg = load_rows(dg, row0, end, H, h, K, 0, BC, BK)
        b_dg += channel_rectangle_sums(z_q * b_q[:, None, :], BC)         # r, s in b
        if NS > 1:
            kend = tl.minimum(row0, end)
            before = start + tl.arange(0, BT) < kend
            d_off = tl.where(before[None, :],
                             load_rows(dp_buf, row0, end, H, h, BT, 0, BC, BT), 0.0)
            dq_off = query_factor(b_gc, ref, valid) * mm(
                d_off, keys_before(k, gc, start, kend, ref, H, h, K, BT, BK), DT)
            b_dq += dq_off
            b_dg += tl.cumsum(b_q * dq_off, 0, reverse=True)              # r in b, s before b
            dk_off = tl.zeros([BC, BK], dtype=tl.float32)
            spanned = tl.zeros([BK], dtype=tl.float32)
            for i in range(b + 1, tl.cdiv(end - start, BC)):
                row0_i, valid_i, gc_i, ref_i = sub_chunk(gc, start, end, i, H, h, K, BC, BK)
                b_qg = (load_rows(q, row0_i, end, H, h, K, 0, BC, BK).to(tl.float32)
                        * query_factor(gc_i, ref_i, valid_i))
                d_ib = load_rows(dp_buf, row0_i, end, H, h, BT, b * BC, BC, BC)
                dk_off += key_factor(b_gc, ref_i, valid) * mm(tl.trans(d_ib), b_qg, DT)
                d_i = tl.where(before[None, :], load_rows(dp_buf, row0_i, end, H, h, BT, 0, BC, BT),
                               0.0)
                spanned += tl.sum(b_qg * mm(d_i, keys_before(k, gc, start, kend, ref_i, H, h, K, BT,
                                                             BK), DT), 0)
            b_dk += dk_off
            b_dg += exclusive_cumsum_rows(b_k * dk_off)                   # r after b, s in b
            b_dg += tl.where(valid[:, None], spanned[None, :], 0.0)       # r after b, s before b
        store_rows(dq, b_dq, row0, end, H, h, K, 0, BC, BK)
        store_rows(dk, b_dk, row0, end, H, h, K, 0, BC, BK)
        store_rows(dg, b_dg, row0, end, H, h, K, 0, BC, BK)


def gla_forward(q, k, v, g, beta, scale, initial_state, output_final_state, layout: ChunkLayout):
    """The signature of chunk.gdn_forward. beta None: GLA; else KDA (the delta rule): the
    per-channel WY stage (kda.py) first, then the same scans and output on U."""
    H, K = q.shape[2:]
    V = v.shape[-1]
    BK, SBV, BV = block_sizes(K, V, STATE_BV, PARALLEL_BV)
    NC, N, BT = layout.num_chunks, layout.num_seqs, layout.chunk_size
    gc = chunk_cumsum(g, layout)
    delta = beta is not None
    A = w = vnew = None
    u = v
    if delta:
        A, w, u = kda_wy_forward(k, v, beta, gc, layout, BK, BV, SUB_CHUNK)
        vnew = torch.empty_like(v)
    hbuf = states(NC, q, V, q.dtype)
    ht = states(N, q, V, wanted=output_final_state)
    gla_state_fwd_kernel[(triton.cdiv(V, SBV), N * H)](
        k, w, u, gc, initial_state, hbuf, vnew, ht, layout.cu_seqlens, layout.chunk_offsets,
        H, K, V, BT=BT, BK=BK, BV=SBV, HAS_H0=initial_state is not None,
        STORE_FINAL=output_final_state, DELTA=delta,
        **launch("kda_state_fwd" if delta else "gla_state_fwd", BT, q.dtype))
    o = torch.empty_like(v)
    gla_output_fwd_kernel[(triton.cdiv(V, BV), NC * (BT // SUB_CHUNK), H)](
        q, k, vnew if delta else v, gc, hbuf, o, layout.chunk_bounds, scale, H, K, V, BT=BT,
        BK=BK, BV=BV, BC=SUB_CHUNK, **launch("gla_output_fwd", BT, q.dtype))
    return o, ht, (gc, hbuf, A, w, vnew), (o, ht)


def gla_backward(q, k, v, beta, scale, initial_state, saved, do, dht, layout: ChunkLayout):
    """The signature of chunk.gdn_backward: the gradients (dq, dk, dv, dg fp32, dbeta (KDA)
    or None, dh0 fp32 or None), and the tensors whose finiteness decides the fallback."""
    gc, hbuf, A, w, vnew = saved
    B, T, H, K = q.shape
    V = v.shape[-1]
    BK, SBV, BV = block_sizes(K, V, STATE_BV, PARALLEL_BV)
    NC, N, BT = layout.num_chunks, layout.num_seqs, layout.chunk_size
    NS = BT // SUB_CHUNK
    delta = beta is not None
    part = dict(dtype=torch.float32, device=q.device)
    dv_local = torch.empty(B * T, H, V, **part)
    gla_local_dv_kernel[(triton.cdiv(V, BV), NC * NS, H)](
        q, k, gc, do, dv_local, layout.chunk_bounds, scale, H, K, V, BT=BT, BK=BK, BV=BV,
        BC=SUB_CHUNK, **launch("gla_local_dv", BT, q.dtype))
    dhbuf = states(NC, q, V, q.dtype)
    du = torch.empty_like(v)  # without the delta rule, dU is dv
    dh0 = states(N, q, V, wanted=initial_state is not None)
    gla_state_bwd_kernel[(triton.cdiv(V, SBV), N * H)](
        q, k, w, gc, do, dv_local, du, dht, dh0, dhbuf, layout.cu_seqlens, layout.chunk_offsets,
        scale, H, K, V, BT=BT, BK=BK, BV=SBV, HAS_DHT=dht is not None,
        STORE_DH0=dh0 is not None, DELTA=delta,
        **launch("kda_state_bwd" if delta else "gla_state_bwd", BT, q.dtype))
    dq_part = torch.empty(B * T, H, K, **part)
    dk_part = torch.empty(B * T, H, K, **part)
    dg = torch.empty(B, T, H, K, **part)
    dp_buf = torch.empty(B * T, H, BT, **part)
    gla_grad_qk_kernel[(NC, H)](q, k, vnew if delta else v, gc, hbuf, dhbuf, do, dq_part, dk_part,
                                dg, dp_buf, layout.chunk_bounds, scale, H, K, V, BT=BT, BK=BK,
                                BV=BV, **launch("gla_grad_qk", BT, q.dtype))
    dq = torch.empty_like(q)
    # with the delta rule dk and dg are partials (fp32), finished by the WY VJP
    dk = dk_part if delta else torch.empty_like(k)
    gla_grad_scores_kernel[(NC * NS, H)](q, k, gc, dp_buf, dq_part, dk_part, dq, dk, dg,
                                         layout.chunk_bounds, H, K, BT=BT, BK=BK, BC=SUB_CHUNK,
                                         **launch("gla_grad_scores", BT, q.dtype))
    if not delta:
        grads = dq, dk, du, dg, None, dh0
        return grads, grads  # the gradients, and what chunk.fallback_flag checks: all of them
    dk, dv, dbeta, dg, dl = kda_wy_backward(k, v, beta, gc, A, hbuf, du, dk, dg, layout, BK,
                                            BV)
    # L's own VJP: L is the score matrix with q = beta k (scale 1), D = dL; G = d(beta k)
    d_kb = torch.zeros(B * T, H, K, **part)
    gla_grad_scores_kernel[(NC * NS, H)](k.float() * beta.float()[..., None], k, gc, dl, d_kb,
                                         dk, d_kb, dk, dg, layout.chunk_bounds, H, K, BT=BT,
                                         BK=BK, BC=SUB_CHUNK,
                                         **launch("gla_grad_scores", BT, q.dtype))
    d_kb = d_kb.view(k.shape)
    dk = (dk.view(k.shape) + beta.float()[..., None] * d_kb).to(k.dtype)
    dbeta = (dbeta + (k.float() * d_kb).sum(-1)).to(beta.dtype)
    grads = dq, dk, dv, dg, dbeta, dh0
    return grads, grads
