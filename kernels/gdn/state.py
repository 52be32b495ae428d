"""The inter-chunk state scans: sequential over the chunks of one sequence, one program per
(sequence, head, V-block), the [K, BV] state held in registers across the loop.

Forward, for chunk c with initial state S (stored for the output stage and the backward):
    U      = Utld - W S                                  corrected values ("new v")
    S_next = exp(gc_last) S + (exp(gc_last - gc) * K)^T U

Backward (reverse scan), with dS the gradient of the state at the chunk's end:
    dU      = P^T dO + (exp(gc_last - gc) * K) dS        P the chunk's masked decayed q k^T
    dS_prev = exp(gc_last) dS + (scale exp(gc) * Q)^T dO - W^T dU

Without the delta rule (simple GLA, Mamba-2's scalar-gate SSD) W = 0 and U = V: the same
scans with the W terms compiled out (DELTA = False).
"""
from __future__ import annotations

import triton
import triton.language as tl

from kdiff.kernels.gdn.jit import shape_jit
from kdiff.kernels.gdn.tile_ops import (
    chunk_rows,
    chunk_span,
    decay,
    initial_state,
    load_log_decay,
    load_rows,
    load_rows_t,
    mm,
    scan_program,
    state_tile,
    store_rows,
    store_state,
)


@triton.jit
def local_du(b_q, b_k, b_do, b_gc, valid, scale, BT: tl.constexpr, DT: tl.constexpr):
    """P^T dO, P^T[s, r] = scale exp(gc_r - gc_s) k_s . q_r for s <= r."""
    r = tl.arange(0, BT)
    causal_t = (r[:, None] <= r[None, :]) & valid[:, None] & valid[None, :]
    b_pt = tl.where(causal_t, mm(b_k, tl.trans(b_q), DT)
                    * decay(b_gc[None, :] - b_gc[:, None]), 0.0) * scale
    return mm(b_pt, b_do, DT)


@shape_jit
def local_du_kernel(q, k, gc, do, du_local, bounds, scale, H, K, V,
                    BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    """The intra-chunk part of dU, P^T dO, off the scan's critical path. Grid (V/BV, chunks, H)."""
    i_v, i_c, h = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    start, end, _, _ = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = q.dtype.element_ty
    b_q = load_rows(q, start, end, H, h, K, 0, BT, BK)
    b_k = load_rows(k, start, end, H, h, K, 0, BT, BK)
    b_do = load_rows(do, start, end, H, h, V, i_v * BV, BT, BV)
    b_gc = load_log_decay(gc, start, end, H, h, BT)
    valid = start + tl.arange(0, BT) < end
    store_rows(du_local, local_du(b_q, b_k, b_do, b_gc, valid, scale, BT, DT), start, end, H, h,
               V, i_v * BV, BT, BV)


@shape_jit
def state_fwd_kernel(k, w, u, gc, h0, hbuf, vnew, ht, cu_seqlens, chunk_offsets, H, K, V,
                     BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                     HAS_H0: tl.constexpr, STORE_FINAL: tl.constexpr, DELTA: tl.constexpr):
    """DELTA False (no delta rule: simple GLA): U is V itself; w, vnew are not touched."""
    i_v = tl.program_id(0)
    i_nh, h, bos, eos, first_chunk = scan_program(cu_seqlens, chunk_offsets, H)
    DT: tl.constexpr = k.dtype.element_ty
    _, _, soffs, smask = state_tile(K, V, i_v, BK, BV)
    S = initial_state(h0, i_nh, K, V, soffs, smask, BK, BV, HAS_H0)
    r = tl.arange(0, BT)
    for c in range(tl.cdiv(eos - bos, BT)):
        start, end = chunk_span(bos, eos, c, BT)
        store_state(hbuf, (first_chunk + c) * H + h, S, K, V, soffs, smask)
        b_u = load_rows(u, start, end, H, h, V, i_v * BV, BT, BV).to(tl.float32)
        if DELTA:
            b_w = load_rows(w, start, end, H, h, K, 0, BT, BK)
            b_u = b_u - mm(b_w, S, DT)
            store_rows(vnew, b_u, start, end, H, h, V, i_v * BV, BT, BV)
        b_gc = load_log_decay(gc, start, end, H, h, BT)
        g_last = tl.load(gc + (end - 1).to(tl.int64) * H + h)
        to_end = tl.where(start + r < end, decay(g_last - b_gc), 0.0)
        b_kt = load_rows_t(k, start, end, H, h, K, 0, BT, BK)
        # K^T diag(to_end) U: the row scaling goes on the smaller [BT, BV] tile
        S = S * decay(g_last) + mm(b_kt, b_u * to_end[:, None], DT)
    if STORE_FINAL:
        store_state(ht, i_nh, S, K, V, soffs, smask)


@shape_jit
def state_bwd_kernel(q, k, w, gc, do, du_local, du, dht, dh0, dhbuf, cu_seqlens, chunk_offsets,
                     scale, H, K, V, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                     HAS_DHT: tl.constexpr, STORE_DH0: tl.constexpr, DELTA: tl.constexpr,
                     LOCAL_GIVEN: tl.constexpr):
    """LOCAL_GIVEN: P^T dO was computed by the chunk-parallel `local_du_kernel` (du_local, in
    the working dtype); otherwise it is computed here (fp32), on the scan's critical path."""
    i_v = tl.program_id(0)
    i_nh, h, bos, eos, first_chunk = scan_program(cu_seqlens, chunk_offsets, H)
    DT: tl.constexpr = k.dtype.element_ty
    _, _, soffs, smask = state_tile(K, V, i_v, BK, BV)
    dS = initial_state(dht, i_nh, K, V, soffs, smask, BK, BV, HAS_DHT)
    r = tl.arange(0, BT)
    num_chunks = tl.cdiv(eos - bos, BT)
    for i in range(num_chunks):
        c = num_chunks - 1 - i
        start, end = chunk_span(bos, eos, c, BT)
        valid = start + r < end
        store_state(dhbuf, (first_chunk + c) * H + h, dS, K, V, soffs, smask)
        b_q = load_rows(q, start, end, H, h, K, 0, BT, BK)
        b_k = load_rows(k, start, end, H, h, K, 0, BT, BK)
        b_do = load_rows(do, start, end, H, h, V, i_v * BV, BT, BV)
        b_gc = load_log_decay(gc, start, end, H, h, BT)
        g_last = tl.load(gc + (end - 1).to(tl.int64) * H + h)
        to_end = tl.where(valid, decay(g_last - b_gc), 0.0)
        b_du = mm(b_k.to(tl.float32) * to_end[:, None], dS, DT)  # decay before the product
        if LOCAL_GIVEN:
            b_du += load_rows(du_local, start, end, H, h, V, i_v * BV, BT, BV).to(tl.float32)
        else:
            b_du += local_du(b_q, b_k, b_do, b_gc, valid, scale, BT, DT)
        store_rows(du, b_du, start, end, H, h, V, i_v * BV, BT, BV)
        b_dog = b_do.to(tl.float32) * (scale * decay(b_gc))[:, None]
        dS = dS * decay(g_last) + mm(tl.trans(b_q), b_dog, DT)
        if DELTA:
            b_w = load_rows(w, start, end, H, h, K, 0, BT, BK)
            dS -= mm(tl.trans(b_w), b_du, DT)
    if STORE_DH0:
        store_state(dh0, i_nh, dS, K, V, soffs, smask)
