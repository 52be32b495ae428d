"""The intra-chunk output stage and its backward, parallel over (chunk, head).

Forward, chunk with initial state S and corrected values U:
    O = scale exp(gc) * (Q S) + P U,   P_rs = scale exp(gc_r - gc_s) q_r . k_s for s <= r

Backward (the parts through Q, K, U, S and the chunk-end state S_next):
    dQ  = scale exp(gc) * (dO S^T) + (dP * mask * decay * scale) K,  dP = dO U^T
    dK  = (dP * ...)^T Q + exp(gc_last - gc) * (U dS_next^T)
    dg_j = the terms whose decay carries g_j (see tile_ops.rectangle_sums), plus the chunk-end
           terms; the WY stage adds its own.
"""
from __future__ import annotations

import triton.language as tl

from kdiff.kernels.gdn.jit import shape_jit
from kdiff.kernels.gdn.tile_ops import (
    chunk_rows,
    decay,
    exclusive_cumsum,
    load_log_decay,
    load_rows,
    load_state,
    mm,
    rectangle_sums,
    state_tile,
    store_flag,
    store_head_vec,
    store_rows,
)


@shape_jit
def output_fwd_kernel(q, k, vnew, gc, hbuf, o, flags, bounds, scale, H, K, V,
                      BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    """flags [chunks, H, V/BV]: NaN where the program's output tile holds a non-finite value.
    BK: the slice of K whose products (Q S and Q K^T) are accumulated per step, so that the
    next slice's loads are in flight while this one's products run (pipeline stages)."""
    i_v, i_c, h = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    start, end, r, valid = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = q.dtype.element_ty
    cv = i_v * BV + tl.arange(0, BV)
    state = hbuf + (i_c.to(tl.int64) * H + h) * K * V
    b_gc = load_log_decay(gc, start, end, H, h, BT)
    q_decay = scale * decay(b_gc)
    b_o = tl.zeros([BT, BV], dtype=tl.float32)
    qk = tl.zeros([BT, BT], dtype=tl.float32)
    for col0 in range(0, K, BK):
        rk = col0 + tl.arange(0, BK)
        S = tl.load(state + rk[:, None] * V + cv[None, :],
                    mask=(rk < K)[:, None] & (cv < V)[None, :], other=0.0)
        b_q = load_rows(q, start, end, H, h, K, col0, BT, BK)
        b_k = load_rows(k, start, end, H, h, K, col0, BT, BK)
        # decays scale the operand, not the product (as the recurrence does): a product that
        # overflows must not meet a zero decay (inf * 0 = NaN where the recurrence gives 0)
        b_o += mm(b_q.to(tl.float32) * q_decay[:, None], S, DT)
        qk += mm(b_q, tl.trans(b_k), DT)
    causal = (r[:, None] >= r[None, :]) & valid[:, None] & valid[None, :]
    b_p = tl.where(causal, qk * decay(b_gc[:, None] - b_gc[None, :]), 0.0) * scale
    b_u = load_rows(vnew, start, end, H, h, V, i_v * BV, BT, BV)
    b_o += mm(b_p, b_u, DT)
    bad = store_rows(o, b_o, start, end, H, h, V, i_v * BV, BT, BV)
    store_flag(flags, (i_c * H + h) * tl.num_programs(0) + i_v, bad)


@shape_jit
def grad_qk_kernel(q, k, vnew, gc, hbuf, dhbuf, do, dq, dk_part, dg_part, flags, bounds,
                   scale, H, K, V, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    """flags [chunks, H]: NaN where the program's dq, dk or dg partials hold a non-finite
    value (without the delta rule the partials are the final dk and dg)."""
    i_c, h = tl.program_id(0), tl.program_id(1)
    start, end, r, valid = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = q.dtype.element_ty
    b_gc = load_log_decay(gc, start, end, H, h, BT)
    g_last = tl.load(gc + (end - 1).to(tl.int64) * H + h)
    q_decay = scale * decay(b_gc)                         # of the output's state part
    to_end = tl.where(valid, decay(g_last - b_gc), 0.0)  # of K^T U in the next state
    dq_state = tl.zeros([BT, BK], dtype=tl.float32)  # scale exp(gc) dO S^T
    dk_d = tl.zeros([BT, BK], dtype=tl.float32)      # exp(gc_last - gc) U dS_next^T
    dp = tl.zeros([BT, BT], dtype=tl.float32)       # dO U^T
    ds_dot = tl.zeros([BK], dtype=tl.float32)       # row sums of S * dS_next
    for i_v in range(tl.cdiv(V, BV)):
        _, _, soffs, smask = state_tile(K, V, i_v, BK, BV)
        S = load_state(hbuf, i_c * H + h, K, V, soffs, smask)
        dS = load_state(dhbuf, i_c * H + h, K, V, soffs, smask)
        b_u = load_rows(vnew, start, end, H, h, V, i_v * BV, BT, BV)
        b_do = load_rows(do, start, end, H, h, V, i_v * BV, BT, BV)
        # row decays on the [BT, BV] operands, before the products (see output_fwd_kernel)
        dq_state += mm(b_do.to(tl.float32) * q_decay[:, None], tl.trans(S), DT)
        dk_d += mm(b_u.to(tl.float32) * to_end[:, None], tl.trans(dS), DT)
        dp += mm(b_do, tl.trans(b_u), DT)
        ds_dot += tl.sum(S.to(tl.float32) * dS.to(tl.float32), 1)
    b_q = load_rows(q, start, end, H, h, K, 0, BT, BK)
    b_k = load_rows(k, start, end, H, h, K, 0, BT, BK)
    causal = (r[:, None] >= r[None, :]) & valid[:, None] & valid[None, :]
    dp = tl.where(causal, dp * decay(b_gc[:, None] - b_gc[None, :]), 0.0) * scale
    b_dq = dq_state + mm(dp, b_k, DT)
    dk_p = mm(tl.trans(dp), b_q, DT)
    # log-gate derivative, each term collected only where its decay carries g_j:
    # Q S: exp(gc_r) for j <= r; P: exp(gc_r - gc_s) for s < j <= r;
    # K^T U: exp(gc_last - gc_r) for r < j; the carried state: exp(gc_last) for every j
    qk = mm(b_q, tl.trans(b_k), DT)
    b_dg = tl.cumsum(tl.sum(b_q.to(tl.float32) * dq_state, 1), 0, reverse=True)
    b_dg += rectangle_sums(dp * qk, BT)
    b_dg += exclusive_cumsum(tl.sum(b_k.to(tl.float32) * dk_d, 1), BT)
    b_dg += tl.where(valid, decay(g_last) * tl.sum(ds_dot, 0), 0.0)
    bad = store_rows(dq, b_dq, start, end, H, h, K, 0, BT, BK)
    bad += store_rows(dk_part, dk_p + dk_d, start, end, H, h, K, 0, BT, BK)
    bad += store_head_vec(dg_part, b_dg, start, end, H, h, BT)
    store_flag(flags, i_c * H + h, bad)
