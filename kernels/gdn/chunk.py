"""Chunked Gated DeltaNet, forward and training backward, as a torch.autograd.Function.

    S_t = exp(g_t) (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,   o_t = scale S_t^T q_t

Stages (each one launch): chunk-local cumsum of g -> WY inverse -> WY apply -> state scan ->
output; backward: reverse state scan -> dq, dk and dg parts -> WY VJP (dk, dv, dbeta, dg).
Each pass ends in the fallback check (fallback.py) and the gated token-by-token launch.
A per-channel gate g [B, T, H, K] runs gla.py's passes instead: GLA without beta, KDA
(the delta rule, kda.py's WY stage) with it.

Non-finite values: the chunked result is exact only where every value is finite (a NaN at
token t reaches earlier tokens of its chunk through masked products; an overflow meets a zero
decay). A call whose chunked outputs (forward: o and the final state; backward: the gradients)
hold a NaN or an Inf is recomputed by the token-by-token path (recurrent.py), whose masks are
the sequential recurrence's. The check reads flags that the kernels storing the results write
(one float per program, NaN where a stored value is non-finite). Both passes decide on the
device: the token-by-token kernels are launched on every call and return at once unless the
flag says otherwise (the backward's: the forward's flag, or the gradients' own).
"""
from __future__ import annotations

import torch
import triton

from kdiff.kernels.gdn.fallback import fallback_flag
from kdiff.kernels.gdn.gla import GLA_CHUNK, gla_backward, gla_forward
from kdiff.kernels.gdn.host import (
    check_head_dim,
    chunk_cumsum,
    key_block,
    launch_options,
    multiprocessors,
    states,
    value_block,
)
from kdiff.kernels.gdn.kda import KDA_CHUNK
from kdiff.kernels.gdn.output import grad_qk_kernel, output_fwd_kernel
from kdiff.kernels.gdn.recurrent import recurrent_backward, recurrent_forward
from kdiff.kernels.gdn.state import local_du_kernel, state_bwd_kernel, state_fwd_kernel
from kdiff.kernels.gdn.varlen import ChunkLayout, chunk_layout
from kdiff.kernels.gdn.wy import wy_apply_kernel, wy_bwd_kernel, wy_inverse_kernel

SUPPORTED_CHUNKS = (16, 64)


# Launch settings, chosen on the H200 (Triton 3.6, bf16, K = V = 128) by
# `benchmarks/gdn_profile.py --sweep` at (1, 8192, 96): each kernel's own device time under
# every setting of its grid, the fastest kept (the tables are in NOTES.md, "Where the time
# went" and "Launch settings where programs are few"). The WY inverse runs one warp per chunk
# (its forward substitution is a chain of small reductions: within one warp they are
# shuffles; 1 warp 0.377 ms, 4 warps 0.800, 8 warps 1.647); the state scans take 64-column
# V-blocks with 4 warps; W/Utld and the output all 128 columns of V at once (the output's
# Q K^T then formed once per chunk, not once per V-block: 0.475 ms against 0.485 at 64).
# In the backward (eighth session): P^T dO over all 128 columns (P formed once per chunk:
# 0.295 ms against 0.394 at 64), the WY VJP over 32-column blocks with 3 stages (1.201 ms
# against 1.313 at 64 columns and 1 stage); grad_qk kept (64 columns, 8 warps, 3 stages).
# Ninth session: W/Utld and the output loop over K in 64-wide slices with 3 stages (the next
# slice's loads in flight during this one's products): the output 0.384 ms against 0.472
# without the loop, W/Utld at 64 columns of V 0.270 against 0.283 (A in the working dtype).
# Tenth session, with the inverse's block merge in TF32 (wy._merge): the inverse 0.209 ms at
# 1 warp (2 warps 0.365); W/Utld's warps and stages swept again, 4 and 3 kept.
# The V-block of each kernel that tiles V (the state scans' own where programs are few, below).
BLOCK_V = {"state_fwd": 64, "state_bwd": 64, "wy_apply": 64, "output_fwd": 128,
           "local_du": 128, "grad_qk": 64, "wy_bwd": 32}
WARPS = {"state_fwd": 4, "state_bwd": 4, "output_fwd": 4, "grad_qk": 8, "wy_bwd": 4,
         "wy_inverse": 1, "wy_apply": 4, "local_du": 4}
# The slice of K a kernel takes per step where it loops over K (at most all of K, key_block):
# the WY inverse accumulates k_r . k_s over it; W/Utld and the output pipeline their loads
# over it.
BLOCK_K = {"wy_inverse": 64, "wy_apply": 64, "output_fwd": 64}
# Pipeline stages where Triton's default (3) is not the choice; fp32 always takes one
# (host.launch_options).
STAGES: dict[str, int] = {"state_fwd": 2, "state_bwd": 1, "local_du": 2}

# The backward scan's intra-chunk term P^T dO: computed by a chunk-parallel kernel before the
# scan (as fla does; one more [T, H, V] round trip, in the working dtype as fla's) or inside
# the scan (on its critical path, kept in fp32). gdn_bench.py times both ("alt f+b"): the
# separate kernel was 0.5-3% faster.
SPLIT_LOCAL_DU = True


# The state scans where they would have fewer programs than the GPU has multiprocessors
# (few_programs): each program is a chain of T/C dependent steps, so there the step's latency
# sets the time, not the throughput the settings above were swept for. Their own V-block,
# warps and stages, from `gdn_profile.py --sweep` at (2, 16384, 16) (32 sequence-heads):
# state_fwd 0.582 -> 0.323 ms, state_bwd 1.147 -> 0.846 ms against the settings before
# (32 columns; 2 warps and 2 stages, 4 warps and 1 stage).
FEW_PROGRAMS_SCAN = {"state_fwd": {"bv": 32, "warps": 4, "stages": 3},
                     "state_bwd": {"bv": 16, "warps": 4, "stages": 2}}


# fp32 (the gates' dtype: IEEE products on the FMA units, whole fp32 tiles per thread) takes 8
# warps wherever the bf16 settings have fewer: with the bf16 settings the sm_90 compile at
# K = V = 128 (Triton 3.9, this machine) took 42.8 s for output_fwd (2 warps; 6.7 s at 8),
# 64.0 s for wy_bwd (4; 22.2 s), 21.0 s for state_bwd (4; 5.7 s), 8.7 s for state_fwd (4;
# 5.1 s): 163 s for the nine kernels against 60 s, and a verify on a GPU compiles them again
# for every block size its held-out shapes reach.
# The WY inverse keeps its one warp (0.5 s; 3.3 s at 4).
FP32_MIN_WARPS = 8


def launch(kernel: str, dtype: torch.dtype, few: bool = False) -> dict:
    """few: a state scan with few programs (few_programs), FEW_PROGRAMS_SCAN's settings."""
    warps, stages = WARPS[kernel], STAGES.get(kernel)
    if few:
        warps, stages = FEW_PROGRAMS_SCAN[kernel]["warps"], FEW_PROGRAMS_SCAN[kernel]["stages"]
    if dtype == torch.float32 and kernel != "wy_inverse":
        warps = max(warps, FP32_MIN_WARPS)
    return launch_options(warps, dtype, stages)


def block_v(kernel: str, V: int) -> int:
    """BLOCK_V[kernel], or less where V itself is smaller (host.value_block)."""
    return value_block(V, BLOCK_V[kernel])


def block_k(kernel: str, K: int) -> int:
    """BLOCK_K[kernel], or less where K itself is smaller."""
    return value_block(K, BLOCK_K[kernel])


def few_programs(kernel: str, sequence_heads: int, V: int, device: torch.device) -> bool:
    """Whether a state scan at BLOCK_V would have fewer programs (sequences x heads x V-blocks)
    than the GPU has multiprocessors: at (2, 16384, 16) (32 sequence-heads) BLOCK_V 64 gave
    64 programs for the H200's 132, and the forward+backward took 6.10 ms, against 4.59 ms at
    BV 32 in an earlier session; at (1, 8192, 96) BV 64 (192 programs) is the sweep's
    fastest. Never on the CPU."""
    return sequence_heads * triton.cdiv(V, block_v(kernel, V)) < multiprocessors(device)


def scan_bv(kernel: str, few: bool, V: int) -> int:
    """A state scan's V-block: BLOCK_V's, or FEW_PROGRAMS_SCAN's where programs are few."""
    return value_block(V, FEW_PROGRAMS_SCAN[kernel]["bv"]) if few else block_v(kernel, V)


def backward_scan_few(sequence_heads: int, V: int, device: torch.device) -> bool:
    """few_programs for the backward scan. With P^T dO inside the scan (SPLIT_LOCAL_DU off)
    never: on the H200 (Triton 3.6, bf16, BV 32, 4 warps, 1 stage) that compiled
    state_bwd_kernel reads past its shared memory in the tile product (compute-sanitizer:
    "Invalid __shared__ read of size 1024 bytes"; benchmarks/gdn_alt_probe.py), though
    through the interpreter its gradients equal the default path's bitwise. The other three
    settings ran clean."""
    return SPLIT_LOCAL_DU and few_programs("state_bwd", sequence_heads, V, device)


def gdn_forward(q, k, v, g, beta, scale, initial_state, output_final_state, layout: ChunkLayout):
    """beta None: no delta rule (simple GLA): the WY stage is skipped, U = V. Returns o, the
    final state (or None), what the backward needs, and what fallback_flag checks."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    NC, N, BT = layout.num_chunks, layout.num_seqs, layout.chunk_size
    BK = key_block(K)
    few = few_programs("state_fwd", N * H, V, q.device)
    SBV = scan_bv("state_fwd", few, V)
    dev = q.device
    gc = chunk_cumsum(g, layout)
    delta = beta is not None
    A = w = None
    u = vnew = v
    if delta:
        # assembled in fp32 and stored in the working dtype, as fla's: its consumers round it
        # to the working dtype as a product operand anyway (the backward's, bitwise the same;
        # W/Utld's after scaling its columns by beta exp(gc) in fp32: one more rounding)
        A = torch.empty(B * T, H, BT, dtype=q.dtype, device=dev)
        wy_inverse_kernel[(NC, H)](k, beta, gc, A, layout.chunk_bounds, H, K, BT=BT,
                                   BKS=block_k("wy_inverse", K), **launch("wy_inverse", q.dtype))
        w = torch.empty_like(k)
        u = torch.empty_like(v)
        wy_apply_kernel[(NC, H)](k, v, beta, gc, A, w, u, layout.chunk_bounds, H, K, V,
                                 BT=BT, BK=block_k("wy_apply", K), BV=block_v("wy_apply", V),
                                 **launch("wy_apply", q.dtype))
        vnew = torch.empty_like(v)
    hbuf = states(NC, q, V, q.dtype)
    ht = states(N, q, V, wanted=output_final_state)
    state_fwd_kernel[(triton.cdiv(V, SBV), N * H)](
        k, w, u, gc, initial_state, hbuf, vnew, ht, layout.cu_seqlens, layout.chunk_offsets,
        H, K, V, BT=BT, BK=BK, BV=SBV, HAS_H0=initial_state is not None,
        STORE_FINAL=output_final_state, DELTA=delta,
        **launch("state_fwd", q.dtype, few))
    o = torch.empty_like(v)
    BV = block_v("output_fwd", V)
    flags = torch.empty(NC, H, triton.cdiv(V, BV), dtype=torch.float32, device=dev)
    output_fwd_kernel[(triton.cdiv(V, BV), NC, H)](q, k, vnew, gc, hbuf, o, flags,
                                                  layout.chunk_bounds, scale, H, K, V, BT=BT,
                                                  BK=block_k("output_fwd", K), BV=BV,
                                                  **launch("output_fwd", q.dtype))
    # what fallback_flag checks: o through the output kernel's flags, and the final state
    return o, ht, (gc, A, w, hbuf, vnew), (flags, ht)


def gdn_backward(q, k, v, beta, scale, initial_state, saved, do, dht, layout: ChunkLayout):
    """(dq, dk, dv, dg fp32, dbeta or None, dh0 fp32 or None), and what fallback_flag checks."""
    gc, A, w, hbuf, vnew = saved
    B, T, H, K = q.shape
    V = v.shape[-1]
    NC, N, BT = layout.num_chunks, layout.num_seqs, layout.chunk_size
    BK = key_block(K)
    few = backward_scan_few(N * H, V, q.device)
    SBV = scan_bv("state_bwd", few, V)
    dev = q.device
    dhbuf = states(NC, q, V, q.dtype)
    delta = beta is not None
    du = torch.empty_like(v)  # without the delta rule, dU is dv
    dh0 = states(N, q, V, wanted=initial_state is not None)
    du_local = None
    if SPLIT_LOCAL_DU:
        # in the working dtype (as fla's dv_local): one more rounding of one of dU's two terms,
        # against half the bytes of an fp32 round trip; a value past the dtype's range is an
        # Inf that reaches the flagged gradients, so the call falls back
        du_local = torch.empty(B * T, H, V, dtype=q.dtype, device=dev)
        BV = block_v("local_du", V)
        local_du_kernel[(triton.cdiv(V, BV), NC, H)](q, k, gc, do, du_local, layout.chunk_bounds,
                                                    scale, H, K, V, BT=BT, BK=BK, BV=BV,
                                                    **launch("local_du", q.dtype))
    state_bwd_kernel[(triton.cdiv(V, SBV), N * H)](
        q, k, w, gc, do, du_local, du, dht, dh0, dhbuf, layout.cu_seqlens, layout.chunk_offsets,
        scale, H, K, V, BT=BT, BK=BK, BV=SBV, HAS_DHT=dht is not None,
        STORE_DH0=dh0 is not None, DELTA=delta, LOCAL_GIVEN=SPLIT_LOCAL_DU,
        **launch("state_bwd", q.dtype, few))
    dq = torch.empty_like(q)
    dk_part = torch.empty(B * T, H, K, dtype=torch.float32, device=dev)
    dg_part = torch.empty(B * T, H, dtype=torch.float32, device=dev)
    qk_flags = torch.empty(NC, H, dtype=torch.float32, device=dev)
    grad_qk_kernel[(NC, H)](q, k, vnew, gc, hbuf, dhbuf, do, dq, dk_part, dg_part, qk_flags,
                            layout.chunk_bounds, scale, H, K, V, BT=BT, BK=BK,
                            BV=block_v("grad_qk", V), **launch("grad_qk", q.dtype))
    if not delta:
        dk = dk_part.view_as(k).to(k.dtype)
        grads = dq, dk, du, dg_part.view(B, T, H), None, dh0
        return grads, (qk_flags, dk, du, dh0)  # dk: its rounding to k's dtype
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    dbeta = torch.empty_like(beta)
    dg = torch.empty(B, T, H, dtype=torch.float32, device=dev)
    wy_flags = torch.empty(NC, H, dtype=torch.float32, device=dev)
    wy_bwd_kernel[(NC, H)](k, v, beta, gc, A, hbuf, du, dk_part, dg_part, dk, dv, dbeta, dg,
                           wy_flags, layout.chunk_bounds, H, K, V, BT=BT, BK=BK,
                           BV=block_v("wy_bwd", V), **launch("wy_bwd", q.dtype))
    # what fallback_flag checks: dq through grad_qk's flags, dk, dv, dbeta, dg through the WY
    # VJP's, and the initial state's gradient
    return (dq, dk, dv, dg, dbeta, dh0), (qk_flags, wy_flags, dh0)


class ChunkGatedDeltaRuleFunction(torch.autograd.Function):

    @staticmethod
    def forward(ctx, q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens,
                chunk_size):
        B, T, H, K = q.shape
        check_head_dim(K)
        layout = chunk_layout(B, T, chunk_size, q.device, cu_seqlens)
        if initial_state is not None and initial_state.shape != (layout.num_seqs, H, K, v.shape[-1]):
            raise ValueError(f"initial_state must be [{layout.num_seqs}, {H}, {K}, {v.shape[-1]}],"
                             f" got {list(initial_state.shape)}")
        q, k, v, g = (x.contiguous() for x in (q, k, v, g))
        beta = None if beta is None else beta.contiguous()
        if initial_state is not None:
            initial_state = initial_state.contiguous()
        # a per-channel gate (GLA; KDA with beta) runs gla.py's passes, a scalar one GDN's
        chunked_forward = gla_forward if g.dim() == 4 else gdn_forward
        o, ht, saved, checked = chunked_forward(q, k, v, g, beta, scale, initial_state,
                                                output_final_state, layout)
        # decided on the device: a host sync here left the GPU idle while the host launched
        # the next call (A/B on the H200 at (1, 8192, 96): forward 1.860 -> 1.638 ms)
        fallback = fallback_flag(*checked)
        recurrent_forward(q, k, v, g, beta, scale, initial_state, layout, o=o, ht=ht,
                          when=fallback)
        ctx.save_for_backward(q, k, v, g, beta, initial_state, fallback, *saved)
        ctx.layout, ctx.scale, ctx.g_dtype = layout, scale, g.dtype
        ctx.h0_dtype = None if initial_state is None else initial_state.dtype
        if ht is not None:
            return o, ht
        return o

    @staticmethod
    def backward(ctx, do, dht=None):
        q, k, v, g, beta, initial_state, fallback, *saved = ctx.saved_tensors
        do = do.contiguous()
        dht = None if dht is None else dht.contiguous()
        chunked_backward = gla_backward if g.dim() == 4 else gdn_backward
        grads, checked = chunked_backward(q, k, v, beta, ctx.scale, initial_state, saved, do,
                                          dht, ctx.layout)
        # decided on the device, as the forward's: the host sync this replaced let the GPU drain
        # while the host waited, so the host work up to the next call's first kernel was paid
        # in full (NOTES.md, "The backward's fallback decided on the device")
        recurrent_backward(q, k, v, g, beta, ctx.scale, initial_state, do, dht, ctx.layout,
                           grads, when=fallback | fallback_flag(*checked))
        dq, dk, dv, dg, dbeta, dh0 = grads
        if dh0 is not None:
            dh0 = dh0.to(ctx.h0_dtype)
        return dq, dk, dv, dg.to(ctx.g_dtype), dbeta, None, dh0, None, None, None


def chunk_gated_delta_rule(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                           beta: torch.Tensor, scale: float | None = None,
                           initial_state: torch.Tensor | None = None,
                           output_final_state: bool = False,
                           cu_seqlens: torch.Tensor | None = None, chunk_size: int = 64):
    """q, k [B, T, H, K]; v [B, T, H, V]; g, beta [B, T, H] (g the log-space decay);
    initial_state [N, H, K, V] (N = B, or the number of packed sequences); cu_seqlens [N + 1]
    with B == 1. Returns o [B, T, H, V], and the fp32 final state [N, H, K, V] when
    output_final_state."""
    if chunk_size not in SUPPORTED_CHUNKS:
        raise ValueError(f"chunk_size must be one of {SUPPORTED_CHUNKS}")
    if g.shape != q.shape[:3]:  # a per-channel gate is chunk_gla's or chunk_kda's
        raise ValueError(f"the gate must be [B, T, H], got {list(g.shape)}")
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    return ChunkGatedDeltaRuleFunction.apply(q, k, v, g, beta, scale, initial_state,
                                             output_final_state, cu_seqlens, chunk_size)


def chunk_simple_gla(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                     scale: float | None = None, initial_state: torch.Tensor | None = None,
                     output_final_state: bool = False, cu_seqlens: torch.Tensor | None = None,
                     chunk_size: int = 64):
    """Simple GLA / Mamba-2 scalar-gate recurrence S_t = exp(g_t) S_{t-1} + k_t v_t^T,
    o_t = scale S_t^T q_t: the same stages without the delta rule. Arguments as
    chunk_gated_delta_rule, without beta."""
    if chunk_size not in SUPPORTED_CHUNKS:
        raise ValueError(f"chunk_size must be one of {SUPPORTED_CHUNKS}")
    if g.shape != q.shape[:3]:  # a per-channel gate is chunk_gla's or chunk_kda's
        raise ValueError(f"the gate must be [B, T, H], got {list(g.shape)}")
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    return ChunkGatedDeltaRuleFunction.apply(q, k, v, g, None, scale, initial_state,
                                             output_final_state, cu_seqlens, chunk_size)


def chunk_gla(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
              scale: float | None = None, initial_state: torch.Tensor | None = None,
              output_final_state: bool = False, cu_seqlens: torch.Tensor | None = None,
              chunk_size: int = GLA_CHUNK):
    """GLA: per-channel gate g [B, T, H, K] (log-space decay), no delta rule,
    S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T, o_t = scale S_t^T q_t; chunks of 64 (default)
    or 16, sub-chunks of 16 (gla.py). Other arguments as chunk_gated_delta_rule, without
    beta."""
    if chunk_size not in SUPPORTED_CHUNKS:
        raise ValueError(f"chunk_size must be one of {SUPPORTED_CHUNKS}")
    if g.shape != q.shape:
        raise ValueError(f"the GLA gate must be [B, T, H, K] like q, got {list(g.shape)}")
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    return ChunkGatedDeltaRuleFunction.apply(q, k, v, g, None, scale, initial_state,
                                             output_final_state, cu_seqlens, chunk_size)


def chunk_kda(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
              beta: torch.Tensor, scale: float | None = None,
              initial_state: torch.Tensor | None = None, output_final_state: bool = False,
              cu_seqlens: torch.Tensor | None = None, chunk_size: int = KDA_CHUNK):
    """KDA (Kimi Delta Attention): per-channel gate g [B, T, H, K] (log-space decay) with the
    delta rule, beta [B, T, H]:
    S_t = (I - beta_t k_t k_t^T) diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T,
    o_t = scale S_t^T q_t (reference.gated_recurrence's convention); chunks of 64 (default)
    or 16, sub-chunks of 16 (kda.py, gla.py). k is used as given (normalise it first, as the
    recurrence's stability assumes). Other arguments as chunk_gated_delta_rule."""
    if chunk_size not in SUPPORTED_CHUNKS:
        raise ValueError(f"chunk_size must be one of {SUPPORTED_CHUNKS}")
    if g.shape != q.shape:
        raise ValueError(f"the KDA gate must be [B, T, H, K] like q, got {list(g.shape)}")
    if beta.shape != q.shape[:3]:
        raise ValueError(f"beta must be [B, T, H], got {list(beta.shape)}")
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    return ChunkGatedDeltaRuleFunction.apply(q, k, v, g, beta, scale, initial_state,
                                             output_final_state, cu_seqlens, chunk_size)
