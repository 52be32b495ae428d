"""Chunked GLA (per-channel gate g [B, T, H, K], no delta rule), forward and training backward:

    S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T,   o_t = scale S_t^T q_t

Chunks of 16 tokens; gc = the chunk-local cumulative log-decay per channel (fp64). Within a
chunk with initial state S:

    O      = scale (Q * exp(gc)) S + P V,
    P_rs   = scale sum_c q_rc k_sc exp(gc_rc - gc_sc)   (s <= r)
    S_next = exp(gc_last) * S + (K * exp(gc_last - gc))^T V

The per-channel decays of P are formed pair by pair ([16, 16, K] elementwise, every exponent
gc_rc - gc_sc <= 0 for s <= r and selected to 0 elsewhere), never as a product of
exp(gc_r) and exp(-gc_s), which overflows for a strong gate. The 16-token chunk is itself the
sub-chunk: its reference point is each pair's own later token.

Backward (dS the gradient of the chunk-end state, D = scale mask * (dO V^T), E_rsc the pair decays):
    dV      = P^T dO + (K * exp(gc_last - gc)) dS
    dS_prev = exp(gc_last) * dS + scale (Q * exp(gc))^T dO
    dQ      = scale exp(gc) * (dO S^T) + sum_s D_rs k_s * E_rs
    dK      = sum_r D_rs q_r * E_rs + exp(gc_last - gc) * (V dS^T)
    dg_jc   = the terms whose decay carries g_jc (as output.grad_qk_kernel, per channel):
              Q S for r >= j, P for s < j <= r (a rectangle sum per channel), K^T V for r < j,
              the carried state for every j.

KDA (per-channel gate with the delta rule) runs the same kernels with DELTA: the WY stage
(kda.py) gives W and Utld, the forward scan forms the corrected values U = Utld - W S and the
output and grad_qk kernels read U where GLA reads V; the backward scan's dV is then dU, and
dS_prev gains -W^T dU. kda.py's WY VJP finishes dk, dv, dbeta, dg.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kdiff.kernels.gdn.tile_ops import (channel_rectangle_sums, chunk_rows, chunk_span,
                                        initial_state, load_gate_rows, load_rows, mm, pair_decays,
                                        scan_program, state_tile, store_rows, store_state)
from kdiff.kernels.gdn.host import block_sizes, chunk_cumsum, states
from kdiff.kernels.gdn.kda import kda_wy_backward, kda_wy_forward
from kdiff.kernels.gdn.varlen import ChunkLayout

GLA_CHUNK = 16
# not tuned on a GPU: the [16, 16, BK] pair tensors want more warps than the GDN kernels
STATE_BV, PARALLEL_BV = 32, 64
WARPS = {"gla_state_fwd": 4, "gla_output_fwd": 8, "gla_state_bwd": 8, "gla_grad_qk": 8}


@triton.jit
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
def gla_output_fwd_kernel(q, k, v, gc, hbuf, o, bounds, scale, H, K, V,
                          BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    i_v, i_c, h = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    start, end, _, valid = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = q.dtype.element_ty
    rk = tl.arange(0, BK)
    cv = i_v * BV + tl.arange(0, BV)
    S = tl.load(hbuf + (i_c.to(tl.int64) * H + h) * K * V + rk[:, None] * V + cv[None, :],
                mask=(rk < K)[:, None] & (cv < V)[None, :], other=0.0)
    b_q = load_rows(q, start, end, H, h, K, 0, BT, BK).to(tl.float32)
    b_k = load_rows(k, start, end, H, h, K, 0, BT, BK).to(tl.float32)
    b_gc, _ = load_gate_rows(gc, start, end, H, h, K, BT, BK)
    b_o = mm(b_q * tl.exp(b_gc.to(tl.float32)) * scale, S, DT)
    b_p = tl.sum(b_q[:, None, :] * b_k[None, :, :] * pair_decays(b_gc, valid, BT), 2) * scale
    b_o += mm(b_p, load_rows(v, start, end, H, h, V, i_v * BV, BT, BV), DT)
    store_rows(o, b_o, start, end, H, h, V, i_v * BV, BT, BV)


@triton.jit
def gla_state_bwd_kernel(q, k, w, gc, do, dv, dht, dh0, dhbuf, cu_seqlens, chunk_offsets,
                         scale, H, K, V, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                         HAS_DHT: tl.constexpr, STORE_DH0: tl.constexpr, DELTA: tl.constexpr):
    """Reverse scan; stores dS at every chunk end and dV = P^T dO + (K exp(gc_last - gc)) dS.
    DELTA (KDA): that is dU, the gradient of the corrected values, and U = Utld - W S adds
    -W^T dU to dS_prev (as state.state_bwd_kernel)."""
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
        b_pt = tl.sum(b_q[:, None, :] * b_k[None, :, :] * pair_decays(b_gc, valid, BT), 2)
        b_dv = mm(tl.trans(b_pt * scale), b_do, DT) + mm(b_k * to_end, dS, DT)
        store_rows(dv, b_dv, start, end, H, h, V, i_v * BV, BT, BV)
        b_qg = b_q * tl.exp(b_gc.to(tl.float32)) * scale
        dS = dS * tl.exp(g_last.to(tl.float32))[:, None] + mm(tl.trans(b_qg), b_do, DT)
        if DELTA:
            dS -= mm(tl.trans(load_rows(w, start, end, H, h, K, 0, BT, BK)), b_dv, DT)
    if STORE_DH0:
        store_state(dh0, i_nh, dS, K, V, soffs, smask)


@triton.jit
def gla_grad_qk_kernel(q, k, v, gc, hbuf, dhbuf, do, dq, dk, dg, bounds, scale, H, K, V,
                       BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    i_c, h = tl.program_id(0), tl.program_id(1)
    start, end, r, valid = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = q.dtype.element_ty
    rk = tl.arange(0, BK)
    state_base = (i_c.to(tl.int64) * H + h) * K * V
    b_gc, g_last = load_gate_rows(gc, start, end, H, h, K, BT, BK)
    q_decay = tl.exp(b_gc.to(tl.float32)) * scale
    to_end = tl.where(valid[:, None], tl.exp((g_last[None, :] - b_gc).to(tl.float32)), 0.0)
    dq_state = tl.zeros([BT, BK], dtype=tl.float32)  # dO S^T (decay applied after)
    vds = tl.zeros([BT, BK], dtype=tl.float32)       # V dS_next^T
    dp = tl.zeros([BT, BT], dtype=tl.float32)        # dO V^T
    ds_dot = tl.zeros([BK], dtype=tl.float32)        # row sums of S * dS_next
    for i_v in range(tl.cdiv(V, BV)):
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
    dq_state = dq_state * q_decay
    dk_d = vds * to_end
    b_q = load_rows(q, start, end, H, h, K, 0, BT, BK).to(tl.float32)
    b_k = load_rows(k, start, end, H, h, K, 0, BT, BK).to(tl.float32)
    causal = (r[:, None] >= r[None, :]) & valid[:, None] & valid[None, :]
    d_p = tl.where(causal, dp, 0.0) * scale
    pair = pair_decays(b_gc, valid, BT)                      # [r, s, c]
    z_q = d_p[:, :, None] * pair * b_k[None, :, :]            # dP_rs k_sc E_rsc
    b_dq = dq_state + tl.sum(z_q, 1)
    b_dk = tl.sum(d_p[:, :, None] * pair * b_q[:, None, :], 0) + dk_d
    # log-gate derivative per channel, each term collected only where its decay carries g_jc
    b_dg = tl.cumsum(b_q * dq_state, 0, reverse=True)                  # Q S: r >= j
    b_dg += channel_rectangle_sums(z_q * b_q[:, None, :], BT)           # P: s < j <= r
    y = b_k * dk_d                                                     # K^T V: r < j
    b_dg += tl.sum(tl.where((r[None, :] < r[:, None])[:, :, None], y[None, :, :], 0.0), 1)
    b_dg += tl.where(valid[:, None], (tl.exp(g_last.to(tl.float32)) * ds_dot)[None, :], 0.0)
    store_rows(dq, b_dq, start, end, H, h, K, 0, BT, BK)
    store_rows(dk, b_dk, start, end, H, h, K, 0, BT, BK)
    store_rows(dg, b_dg, start, end, H, h, K, 0, BT, BK)


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
        A, w, u = kda_wy_forward(k, v, beta, gc, layout, BK, BV)
        vnew = torch.empty_like(v)
    hbuf = states(NC, q, V, q.dtype)
    ht = states(N, q, V, wanted=output_final_state)
    gla_state_fwd_kernel[(triton.cdiv(V, SBV), N * H)](
        k, w, u, gc, initial_state, hbuf, vnew, ht, layout.cu_seqlens, layout.chunk_offsets,
        H, K, V, BT=BT, BK=BK, BV=SBV, HAS_H0=initial_state is not None,
        STORE_FINAL=output_final_state, DELTA=delta, num_warps=WARPS["gla_state_fwd"])
    o = torch.empty_like(v)
    gla_output_fwd_kernel[(triton.cdiv(V, BV), NC, H)](
        q, k, vnew if delta else v, gc, hbuf, o, layout.chunk_bounds, scale, H, K, V, BT=BT,
        BK=BK, BV=BV, num_warps=WARPS["gla_output_fwd"])
    return o, ht, (gc, hbuf, A, w, vnew)


def gla_backward(q, k, v, beta, scale, initial_state, saved, do, dht, layout: ChunkLayout):
    """The signature of chunk.gdn_backward: (dq, dk, dv, dg fp32, dbeta (KDA) or None,
    dh0 fp32 or None)."""
    gc, hbuf, A, w, vnew = saved
    B, T, H, K = q.shape
    V = v.shape[-1]
    BK, SBV, BV = block_sizes(K, V, STATE_BV, PARALLEL_BV)
    NC, N, BT = layout.num_chunks, layout.num_seqs, layout.chunk_size
    delta = beta is not None
    dhbuf = states(NC, q, V, q.dtype)
    du = torch.empty_like(v)  # without the delta rule, dU is dv
    dh0 = states(N, q, V, wanted=initial_state is not None)
    gla_state_bwd_kernel[(triton.cdiv(V, SBV), N * H)](
        q, k, w, gc, do, du, dht, dh0, dhbuf, layout.cu_seqlens, layout.chunk_offsets, scale,
        H, K, V, BT=BT, BK=BK, BV=SBV, HAS_DHT=dht is not None, STORE_DH0=dh0 is not None,
        DELTA=delta, num_warps=WARPS["gla_state_bwd"])
    dq = torch.empty_like(q)
    # with the delta rule dk and dg are partials (fp32), finished by the WY VJP
    dk = torch.empty_like(k, dtype=torch.float32) if delta else torch.empty_like(k)
    dg = torch.empty(B, T, H, K, dtype=torch.float32, device=q.device)
    gla_grad_qk_kernel[(NC, H)](q, k, vnew if delta else v, gc, hbuf, dhbuf, do, dq, dk, dg,
                                layout.chunk_bounds, scale, H, K, V, BT=BT, BK=BK, BV=BV,
                                num_warps=WARPS["gla_grad_qk"])
    if not delta:
        return dq, dk, du, dg, None, dh0
    dk, dv, dbeta, dg = kda_wy_backward(k, v, beta, gc, A, hbuf, du, dk, dg, layout, BK, BV)
    return dq, dk, dv, dg, dbeta, dh0
