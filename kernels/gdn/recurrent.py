"""Token-by-token (fused recurrent) Triton path: the recurrence of reference.gated_recurrence,
operation for operation, and the backward that autograd derives from those operations.

The chunked kernels are exact only for finite values: their masked products multiply the zero
part of a triangle by every token of the chunk, so a NaN or Inf at token t reaches earlier
tokens (0 * NaN), and an intermediate that overflows meets a zero decay (inf * 0). This path
forms only the products the sequential recurrence forms, in the same association, so its
NaN and Inf masks are those of the reference (forward and gradients), and its finite values
carry the reference's own rounding. chunk.py uses it for a call whose chunked result holds a
non-finite value.

One step (per head; S [K, V] fp32, d = exp(g_t), a scalar or, for GLA, one per key channel
scaling the rows of S: S * d is then diag(d) S, and dg = <dS1, S> d row by row):
    S1 = S * d;  c = k^T S1;  x = v - c;  E = k x^T;  S2 = S1 + beta * E;  o = scale q^T S2
(without the delta rule: x = v, S2 = S1 + E). Backward of that step, with dS the gradient of
S2 arriving from later tokens (or the final state):
    G = scale do;  dS2 = dS + q G^T;  dq = S2 G
    dE = beta dS2;  dbeta = <dS2, E>;  dk = dE x + S1 dc;  dx = dE^T k;  dv = dx;  dc = -dx
    dS1 = dS2 + k dc^T;  dg = <dS1, S> d;  dS_prev = dS1 * d
(without the delta rule: dk = dS2 v, dv = dS2^T k, dS1 = dS2).

Every quantity is per value column except the sums over V (dq, dk, dbeta, dg). The forward's
grid is (V / BV, sequences * heads). The backward's is one program per sequence and head,
walking all of V in blocks of BV at each token, so those sums are finished in the program and
stored once, with no partial sums per value block to allocate and add. It needs S_{t-1} at
every token, in reverse: a replay of the forward stores the state at each chunk start
(`ckpt`, [chunks, H, K, V] fp32), and the backward replays a chunk's tokens from it into a
per-program scratch of BT states before walking them backwards.

Both kernels can be gated by a one-element flag on the device (`when`): each program reads it
first and returns at once where it is 0. chunk.py launches them so after every chunked
forward and backward, which decides the fallback without a host sync.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kdiff.kernels.gdn.host import key_block, states, value_block
from kdiff.kernels.gdn.jit import shape_jit
from kdiff.kernels.gdn.tile_ops import (
    chunk_span,
    initial_state,
    load_state,
    scan_program,
    state_tile,
    store_state,
)
from kdiff.kernels.gdn.varlen import ChunkLayout

# sm_90 compile at K = V = 128 (benchmarks/gdn_bench.py --compile-report, Triton 3.9): the
# forward holds one [K, 32] state tile (4 warps: 128 registers, no spill), the backward about
# eight such tiles (4 warps: 255 registers and a spill; 8 warps: 186, none)
BV_RECURRENT = 32
WARPS_RECURRENT = {"recurrent_fwd": 4, "recurrent_bwd": 8}


@triton.jit
def _masked_sum(x, mask, axis: tl.constexpr):
    """fp64 sum of fp32 terms over the real rows/columns only: padded positions must not
    meet a non-finite value (0 * NaN) that the reference never forms, and no partial sum may
    overflow where the exact sum is finite (the reference's fp32 order happens not to; an
    overflow that meets a zero derivative downstream, sigmoid'(+-large) or logsigmoid'(large),
    is inf * 0 = NaN where the oracle has 0)."""
    return tl.sum(tl.where(mask, x, 0.0).to(tl.float64), axis)


@triton.jit
def _load_key_gate(k, g, beta, base, K, rk, DELTA: tl.constexpr, PER_CHANNEL: tl.constexpr):
    """k_t, d = exp(g_t) (a scalar, or [BK] per key channel: GLA) and beta_t of token-head
    `base` (t * H + h)."""
    b_k = tl.load(k + base * K + rk, mask=rk < K, other=0.0).to(tl.float32)
    if PER_CHANNEL:
        d = tl.exp(tl.load(g + base * K + rk, mask=rk < K, other=0.0).to(tl.float32))
    else:
        d = tl.exp(tl.load(g + base).to(tl.float32))
    if DELTA:
        b_beta = tl.load(beta + base).to(tl.float32)
    else:
        b_beta = b_k  # unused without the delta rule
    return b_k, d, b_beta


@triton.jit
def _load_token(k, v, g, beta, t, H, h, K, V, rk, cv, DELTA: tl.constexpr,
                PER_CHANNEL: tl.constexpr):
    base = t.to(tl.int64) * H + h
    b_k, d, b_beta = _load_key_gate(k, g, beta, base, K, rk, DELTA, PER_CHANNEL)
    b_v = tl.load(v + base * V + cv, mask=cv < V, other=0.0).to(tl.float32)
    return b_k, b_v, d, b_beta


@triton.jit
def _decayed(S, d, PER_CHANNEL: tl.constexpr):
    """S * exp(g_t), the rows scaled one by one for a per-channel gate."""
    if PER_CHANNEL:
        out = S * d[:, None]
    else:
        out = S * d
    return out


@triton.jit
def _step(S, b_k, b_v, d, b_beta, smask, DELTA: tl.constexpr, PER_CHANNEL: tl.constexpr):
    """One token: (S1, x, E, S2) as the reference forms them."""
    S1 = _decayed(S, d, PER_CHANNEL)
    if DELTA:
        c = _masked_sum(b_k[:, None] * S1, smask, 0).to(tl.float32)
        x = b_v - c
        E = b_k[:, None] * x[None, :]
        S2 = S1 + b_beta * E
    else:
        x = b_v
        E = b_k[:, None] * b_v[None, :]
        S2 = S1 + E
    return S1, x, E, S2


@shape_jit
def recurrent_fwd_kernel(q, k, v, g, beta, h0, o, ht, ckpt, when, cu_seqlens, chunk_offsets,
                         scale, H, K, V, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                         HAS_H0: tl.constexpr, STORE_O: tl.constexpr, STORE_FINAL: tl.constexpr,
                         STORE_CKPT: tl.constexpr, GATED: tl.constexpr, DELTA: tl.constexpr,
                         PER_CHANNEL: tl.constexpr):
    """Stores o, the final state and the chunk-start states, each where its STORE_ flag says;
    GATED: nothing at all unless the one-element flag `when` holds a non-zero value."""
    if GATED:
        if tl.load(when) == 0:
            return
    i_v = tl.program_id(0)
    i_nh, h, bos, eos, first_chunk = scan_program(cu_seqlens, chunk_offsets, H)
    rk, cv, soffs, smask = state_tile(K, V, i_v, BK, BV)
    S = initial_state(h0, i_nh, K, V, soffs, smask, BK, BV, HAS_H0)
    for c in range(tl.cdiv(eos - bos, BT)):
        start = bos + c * BT
        if STORE_CKPT:
            store_state(ckpt, (first_chunk + c) * H + h, S, K, V, soffs, smask)
        for i in range(tl.minimum(BT, eos - start)):
            t = start + i
            b_k, b_v, d, b_beta = _load_token(k, v, g, beta, t, H, h, K, V, rk, cv, DELTA,
                                              PER_CHANNEL)
            S1, x, E, S = _step(S, b_k, b_v, d, b_beta, smask, DELTA, PER_CHANNEL)
            if STORE_O:
                base = t.to(tl.int64) * H + h
                b_q = tl.load(q + base * K + rk, mask=rk < K, other=0.0).to(tl.float32)
                b_o = scale * _masked_sum(b_q[:, None] * S, smask, 0)
                tl.store(o + base * V + cv, b_o.to(o.dtype.element_ty), mask=cv < V)
    if STORE_FINAL:
        store_state(ht, i_nh, S, K, V, soffs, smask)


@shape_jit
def recurrent_bwd_kernel(q, k, v, g, beta, ckpt, slots, dstate, do, dht, dq, dk, dv, dg, dbeta,
                         dh0, when, cu_seqlens, chunk_offsets, scale, H, K, V,
                         BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                         HAS_DHT: tl.constexpr, STORE_DH0: tl.constexpr, GATED: tl.constexpr,
                         DELTA: tl.constexpr, PER_CHANNEL: tl.constexpr):
    """One program per sequence and head, over all of V in blocks of BV, so that the sums
    over V (dq, dk, dbeta, dg) are finished in the program (fp64) and stored once, in the
    gradients' own dtypes: no partial sums per value block. slots: the program's BT replayed
    states; dstate: its dS, carried from token to token through global memory (one [K, V]
    state: a program cannot hold all of V in registers). GATED: nothing unless `when` holds a
    non-zero value."""
    if GATED:
        if tl.load(when) == 0:
            return
    i_nh, h, bos, eos, first_chunk = scan_program(cu_seqlens, chunk_offsets, H)
    NV = tl.cdiv(V, BV)
    rk = tl.arange(0, BK)
    tile = BK * BV  # one V-block of one state, in slots and dstate
    local = rk[:, None] * BV + tl.arange(0, BV)[None, :]
    slots += i_nh.to(tl.int64) * BT * NV * tile
    dstate += i_nh.to(tl.int64) * NV * tile
    for i_v in range(NV):
        rk, cv, soffs, smask = state_tile(K, V, i_v, BK, BV)
        dS = initial_state(dht, i_nh, K, V, soffs, smask, BK, BV, HAS_DHT)
        tl.store(dstate + i_v * tile + local, dS)
    num_chunks = tl.cdiv(eos - bos, BT)
    for i in range(num_chunks):
        c = num_chunks - 1 - i
        start, end = chunk_span(bos, eos, c, BT)
        for i_v in range(NV):  # the replay: each V-block's columns are a chain of their own
            rk, cv, soffs, smask = state_tile(K, V, i_v, BK, BV)
            S = load_state(ckpt, (first_chunk + c) * H + h, K, V, soffs, smask)
            for i_t in range(end - start):
                tl.store(slots + (i_t * NV + i_v) * tile + local, S)
                b_k, b_v, d, b_beta = _load_token(k, v, g, beta, start + i_t, H, h, K, V, rk,
                                                  cv, DELTA, PER_CHANNEL)
                S1, x, E, S = _step(S, b_k, b_v, d, b_beta, smask, DELTA, PER_CHANNEL)
        tl.debug_barrier()  # the replayed states are read back by other threads
        for j in range(end - start):
            t = end - 1 - j
            base = t.to(tl.int64) * H + h
            b_q = tl.load(q + base * K + rk, mask=rk < K, other=0.0).to(tl.float32)
            b_k, d, b_beta = _load_key_gate(k, g, beta, base, K, rk, DELTA, PER_CHANNEL)
            # the sums over V, row by row (fp64), block after block
            acc_dq = tl.zeros([BK], dtype=tl.float64)
            acc_dk = tl.zeros([BK], dtype=tl.float64)
            acc_dbeta = tl.zeros([BK], dtype=tl.float64)
            acc_dg = tl.zeros([BK], dtype=tl.float64)
            for i_v in range(NV):
                rk, cv, soffs, smask = state_tile(K, V, i_v, BK, BV)
                S = tl.load(slots + ((t - start) * NV + i_v) * tile + local)
                dS = tl.load(dstate + i_v * tile + local)
                b_v = tl.load(v + base * V + cv, mask=cv < V, other=0.0).to(tl.float32)
                S1, x, E, S2 = _step(S, b_k, b_v, d, b_beta, smask, DELTA, PER_CHANNEL)
                G = tl.load(do + base * V + cv, mask=cv < V, other=0.0).to(tl.float32) * scale
                dS2 = dS + b_q[:, None] * G[None, :]
                acc_dq += _masked_sum(S2 * G[None, :], smask, 1)
                if DELTA:
                    dE = dS2 * b_beta
                    acc_dbeta += _masked_sum(dS2 * E, smask, 1)
                    dx = _masked_sum(dE * b_k[:, None], smask, 0).to(tl.float32)
                    dc = -dx
                    acc_dk += (_masked_sum(dE * x[None, :], smask, 1)
                               + _masked_sum(dc[None, :] * S1, smask, 1))
                    dS1 = dS2 + b_k[:, None] * dc[None, :]
                else:
                    dx = _masked_sum(dS2 * b_k[:, None], smask, 0).to(tl.float32)
                    acc_dk += _masked_sum(dS2 * x[None, :], smask, 1)
                    dS1 = dS2
                acc_dg += _masked_sum(dS1 * S, smask, 1)
                tl.store(dstate + i_v * tile + local, _decayed(dS1, d, PER_CHANNEL))
                tl.store(dv + base * V + cv, dx.to(dv.dtype.element_ty), mask=cv < V)
            tl.debug_barrier()  # dstate is read back by other threads at the next token
            # fp64 -> fp32 -> the stored dtype, as torch's fp64 .to(bf16) rounds
            tl.store(dq + base * K + rk, acc_dq.to(tl.float32).to(dq.dtype.element_ty),
                     mask=rk < K)
            tl.store(dk + base * K + rk, acc_dk.to(tl.float32).to(dk.dtype.element_ty),
                     mask=rk < K)
            if DELTA:
                tl.store(dbeta + base,
                         tl.sum(acc_dbeta, 0).to(tl.float32).to(dbeta.dtype.element_ty))
            if PER_CHANNEL:  # d: this token's [BK] decays
                tl.store(dg + base * K + rk, (acc_dg * d).to(tl.float32), mask=rk < K)
            else:
                tl.store(dg + base, (tl.sum(acc_dg, 0) * d).to(tl.float32))
        tl.debug_barrier()  # the next chunk's replay overwrites the slots
    if STORE_DH0:
        for i_v in range(NV):
            rk, cv, soffs, smask = state_tile(K, V, i_v, BK, BV)
            store_state(dh0, i_nh, tl.load(dstate + i_v * tile + local), K, V, soffs, smask)


def _blocks(K: int, V: int) -> tuple[int, int, int]:
    BV = value_block(V, BV_RECURRENT)
    return key_block(K), BV, triton.cdiv(V, BV)


def recurrent_forward(q, k, v, g, beta, scale, initial_state, layout: ChunkLayout, o=None,
                      ht=None, ckpt=None, when=None) -> None:
    """Writes into whichever of o [B, T, H, V], the final state ht and the chunk-start states
    ckpt (both fp32, states()) are given; with `when` (a one-element int32 tensor on the
    device), only if it holds a non-zero value, decided on the device. beta None: no delta
    rule."""
    H, K = q.shape[2:]
    BK, BV, NV = _blocks(K, v.shape[-1])
    recurrent_fwd_kernel[(NV, layout.num_seqs * H)](
        q, k, v, g, beta, initial_state, o, ht, ckpt, when, layout.cu_seqlens,
        layout.chunk_offsets, scale, H, K, v.shape[-1], BT=layout.chunk_size, BK=BK, BV=BV,
        HAS_H0=initial_state is not None, STORE_O=o is not None, STORE_FINAL=ht is not None,
        STORE_CKPT=ckpt is not None, GATED=when is not None, DELTA=beta is not None,
        PER_CHANNEL=g.dim() == 4, num_warps=WARPS_RECURRENT["recurrent_fwd"])


def recurrent_backward(q, k, v, g, beta, scale, initial_state, do, dht, layout: ChunkLayout,
                       grads: tuple, when: torch.Tensor | None = None) -> None:
    """Overwrites grads (dq, dk, dv, dg fp32, dbeta or None, dh0 fp32 or None: contiguous, in
    those dtypes; the chunked path's) with the token-by-token gradients; with `when` (as
    recurrent_forward's), only if it holds a non-zero value. The replay's buffers are
    allocated on every call, used or not: the chunk-start states (fp32, [chunks, H, K, V])
    and each program's BT replayed states (fp32, [N * H, BT, K, V]): 0.8 and 0.4 GB at
    (1, 8192, 96) with K = V = 128; the caching allocator keeps them between calls."""
    H, K = q.shape[2:]
    V = v.shape[-1]
    BK, BV, NV = _blocks(K, V)
    N, BT = layout.num_seqs, layout.chunk_size
    ckpt = states(layout.num_chunks, q, V)
    recurrent_forward(q, k, v, g, beta, scale, initial_state, layout, ckpt=ckpt, when=when)
    slots = torch.empty(N * H * BT * NV * BK * BV, dtype=torch.float32, device=q.device)
    dstate = torch.empty(N * H * NV * BK * BV, dtype=torch.float32, device=q.device)
    dq, dk, dv, dg, dbeta, dh0 = grads
    recurrent_bwd_kernel[(1, N * H)](
        q, k, v, g, beta, ckpt, slots, dstate, do, dht, dq, dk, dv, dg, dbeta, dh0, when,
        layout.cu_seqlens, layout.chunk_offsets, scale, H, K, V, BT=BT, BK=BK, BV=BV,
        HAS_DHT=dht is not None, STORE_DH0=dh0 is not None, GATED=when is not None,
        DELTA=beta is not None, PER_CHANNEL=g.dim() == 4,
        num_warps=WARPS_RECURRENT["recurrent_bwd"])
