"""Chunked Gated DeltaNet, forward and training backward, as a torch.autograd.Function.

    S_t = exp(g_t) (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,   o_t = scale S_t^T q_t

Stages (each one launch): chunk-local cumsum of g -> WY inverse -> WY apply -> state scan ->
output; backward: reverse state scan -> dq, dk and dg parts -> WY VJP (dk, dv, dbeta, dg).
A per-channel gate g [B, T, H, K] runs gla.py's passes instead: GLA without beta, KDA
(the delta rule, kda.py's WY stage) with it.

Non-finite values: the chunked result is exact only where every value is finite (a NaN at
token t reaches earlier tokens of its chunk through masked products; an overflow meets a zero
decay). A call whose chunked outputs (forward: o and the final state; backward: the gradients)
hold a NaN or an Inf is recomputed by the token-by-token path (recurrent.py), whose masks are
the sequential recurrence's. The check is one reduction over the results and a host sync.
"""
from __future__ import annotations

import torch
import triton

from kdiff.kernels.gdn.gla import GLA_CHUNK, gla_backward, gla_forward
from kdiff.kernels.gdn.kda import KDA_CHUNK
from kdiff.kernels.gdn.host import block_sizes, chunk_cumsum, launch_options, states
from kdiff.kernels.gdn.output import grad_qk_kernel, output_fwd_kernel
from kdiff.kernels.gdn.recurrent import recurrent_backward, recurrent_forward
from kdiff.kernels.gdn.state import local_du_kernel, state_bwd_kernel, state_fwd_kernel
from kdiff.kernels.gdn.varlen import ChunkLayout, chunk_layout
from kdiff.kernels.gdn.wy import wy_apply_kernel, wy_bwd_kernel, wy_inverse_kernel

SUPPORTED_CHUNKS = (16, 64)


# Launch shapes, chosen from the sm_90 compile (Triton's ptxas resource usage at K = V = 128,
# BT = 64, bf16: registers <= 255 with no or little spilling): the sequential state scans use
# narrow V-blocks (more programs in flight: they are the critical path), 4 warps forward and 8
# backward; the chunk-parallel backward kernels hold [BT, K] fp32 accumulators and use 8 warps.
STATE_BV, PARALLEL_BV = 32, 64
WARPS = {"state_fwd": 4, "state_bwd": 8, "output_fwd": 4, "grad_qk": 8, "wy_bwd": 8,
         "wy_inverse": 4, "wy_apply": 4, "local_du": 4}

# The backward scan's intra-chunk term P^T dO: computed by a chunk-parallel kernel before the
# scan (as fla does; one more [T, H, V] fp32 round trip) or inside the scan (on its critical
# path). Not measured yet: the benchmark times both.
SPLIT_LOCAL_DU = True


def launch(kernel: str, dtype: torch.dtype) -> dict:
    return launch_options(WARPS[kernel], dtype)


def gdn_forward(q, k, v, g, beta, scale, initial_state, output_final_state, layout: ChunkLayout):
    """beta None: no delta rule (simple GLA): the WY stage is skipped, U = V."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    BK, SBV, BV = block_sizes(K, V, STATE_BV, PARALLEL_BV)
    NC, N, BT = layout.num_chunks, layout.num_seqs, layout.chunk_size
    dev = q.device
    gc = chunk_cumsum(g, layout)
    delta = beta is not None
    A = w = None
    u = vnew = v
    if delta:
        A = torch.empty(B * T, H, BT, dtype=torch.float32, device=dev)
        wy_inverse_kernel[(NC, H)](k, beta, gc, A, layout.chunk_bounds, H, K, BT=BT, BK=BK,
                                   **launch("wy_inverse", q.dtype))
        w = torch.empty_like(k)
        u = torch.empty_like(v)
        wy_apply_kernel[(NC, H)](k, v, beta, gc, A, w, u, layout.chunk_bounds, H, K, V,
                                 BT=BT, BK=BK, BV=BV, **launch("wy_apply", q.dtype))
        vnew = torch.empty_like(v)
    hbuf = states(NC, q, V, q.dtype)
    ht = states(N, q, V, wanted=output_final_state)
    state_fwd_kernel[(triton.cdiv(V, SBV), N * H)](
        k, w, u, gc, initial_state, hbuf, vnew, ht, layout.cu_seqlens, layout.chunk_offsets,
        H, K, V, BT=BT, BK=BK, BV=SBV, HAS_H0=initial_state is not None,
        STORE_FINAL=output_final_state, DELTA=delta, **launch("state_fwd", q.dtype))
    o = torch.empty_like(v)
    output_fwd_kernel[(triton.cdiv(V, BV), NC, H)](q, k, vnew, gc, hbuf, o, layout.chunk_bounds,
                                                  scale, H, K, V, BT=BT, BK=BK, BV=BV,
                                                  **launch("output_fwd", q.dtype))
    return o, ht, (gc, A, w, hbuf, vnew)


def gdn_backward(q, k, v, beta, scale, initial_state, saved, do, dht, layout: ChunkLayout):
    gc, A, w, hbuf, vnew = saved
    B, T, H, K = q.shape
    V = v.shape[-1]
    BK, SBV, BV = block_sizes(K, V, STATE_BV, PARALLEL_BV)
    NC, N, BT = layout.num_chunks, layout.num_seqs, layout.chunk_size
    dev = q.device
    dhbuf = states(NC, q, V, q.dtype)
    delta = beta is not None
    du = torch.empty_like(v)  # without the delta rule, dU is dv
    dh0 = states(N, q, V, wanted=initial_state is not None)
    du_local = None
    if SPLIT_LOCAL_DU:
        du_local = torch.empty(B * T, H, V, dtype=torch.float32, device=dev)
        local_du_kernel[(triton.cdiv(V, BV), NC, H)](q, k, gc, do, du_local, layout.chunk_bounds,
                                                    scale, H, K, V, BT=BT, BK=BK, BV=BV,
                                                    **launch("local_du", q.dtype))
    state_bwd_kernel[(triton.cdiv(V, SBV), N * H)](
        q, k, w, gc, do, du_local, du, dht, dh0, dhbuf, layout.cu_seqlens, layout.chunk_offsets,
        scale, H, K, V, BT=BT, BK=BK, BV=SBV, HAS_DHT=dht is not None,
        STORE_DH0=dh0 is not None, DELTA=delta, LOCAL_GIVEN=SPLIT_LOCAL_DU,
        **launch("state_bwd", q.dtype))
    dq = torch.empty_like(q)
    dk_part = torch.empty(B * T, H, K, dtype=torch.float32, device=dev)
    dg_part = torch.empty(B * T, H, dtype=torch.float32, device=dev)
    grad_qk_kernel[(NC, H)](q, k, vnew, gc, hbuf, dhbuf, do, dq, dk_part, dg_part,
                            layout.chunk_bounds, scale, H, K, V, BT=BT, BK=BK, BV=BV,
                            **launch("grad_qk", q.dtype))
    if not delta:
        return dq, dk_part.view_as(k).to(k.dtype), du, dg_part.view(B, T, H), None, dh0
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    dbeta = torch.empty_like(beta)
    dg = torch.empty(B, T, H, dtype=torch.float32, device=dev)
    wy_bwd_kernel[(NC, H)](k, v, beta, gc, A, hbuf, du, dk_part, dg_part, dk, dv, dbeta, dg,
                           layout.chunk_bounds, H, K, V, BT=BT, BK=BK, BV=BV,
                           **launch("wy_bwd", q.dtype))
    return dq, dk, dv, dg, dbeta, dh0


def all_finite(*tensors) -> bool:
    """Whether every element of the given tensors (None skipped) is finite: one fused
    reduction per tensor and one host sync."""
    flags = [torch.isfinite(t).all() for t in tensors if t is not None]
    return bool(torch.stack(flags).all()) if flags else True


class ChunkGatedDeltaRuleFunction(torch.autograd.Function):

    @staticmethod
    def forward(ctx, q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens,
                chunk_size):
        B, T, H, K = q.shape
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
        o, ht, saved = chunked_forward(q, k, v, g, beta, scale, initial_state, output_final_state,
                                       layout)
        ckpt = None
        if not all_finite(o, ht):
            o, ht, ckpt = recurrent_forward(q, k, v, g, beta, scale, initial_state,
                                            output_final_state, layout)
            saved = (None,) * len(saved)
        ctx.save_for_backward(q, k, v, g, beta, initial_state, ckpt, *saved)
        ctx.layout, ctx.scale, ctx.g_dtype = layout, scale, g.dtype
        ctx.h0_dtype = None if initial_state is None else initial_state.dtype
        if ht is not None:
            return o, ht
        return o

    @staticmethod
    def backward(ctx, do, dht=None):
        q, k, v, g, beta, initial_state, ckpt, *saved = ctx.saved_tensors
        do = do.contiguous()
        dht = None if dht is None else dht.contiguous()
        grads = None
        if ckpt is None:
            chunked_backward = gla_backward if g.dim() == 4 else gdn_backward
            grads = chunked_backward(q, k, v, beta, ctx.scale, initial_state, saved, do, dht,
                                     ctx.layout)
            if not all_finite(*grads):
                # the forward was finite: replay it token by token for the chunk-start states
                _, _, ckpt = recurrent_forward(q, k, v, g, beta, ctx.scale, initial_state,
                                               False, ctx.layout)
                grads = None
        if grads is None:
            grads = recurrent_backward(q, k, v, g, beta, ctx.scale, initial_state, ckpt, do,
                                       dht, ctx.layout)
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
