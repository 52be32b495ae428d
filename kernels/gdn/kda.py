"""The WY stage of KDA (Kimi Delta Attention: per-channel gate g [B, T, H, K] with the delta
rule), forward and VJP, for chunks of 16 tokens:

    S_t = (I - beta_t k_t k_t^T) diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T,  o_t = scale S_t^T q_t

(the decay first, then the delta rule: reference.gated_recurrence's convention). Per chunk,
with gc the per-channel chunk-local cumulative log-decay (fp64) and E_rsc = exp(gc_rc - gc_sc):

    L_rs = beta_r sum_c k_rc k_sc E_rsc   (s < r),   A = (I + L)^-1
    W    = A diag(beta) (exp(gc) * K),     Utld = A diag(beta) V

so that the chunk's corrected values are U = Utld - W S for its initial state S, as for Gated
DeltaNet (wy.py), with the scalar decays replaced channel by channel. Every E_rsc is formed
pair by pair (tile_ops.pair_decays: exponent <= 0, never exp(gc_r) exp(-gc_s)), and
exp(gc) <= 1: nothing overflows that the recurrence does not. The rest of the pipeline is
GLA's (gla.py) with DELTA: its state scans correct U and carry -W^T dU, its output and grad_qk
kernels read U in place of V.

VJP, given dU (the backward scan's) and S:
    dW = -dU S^T;  dv = beta (A^T dU);  dA = dU (beta V)^T + dW Kb^T,  Kb = beta exp(gc) * K
    dKb = A^T dW:  dk += beta exp(gc) * dKb,  dbeta += sum_c exp(gc) k dKb,
                   dg_jc += sum_{r >= j} (Kb * dKb)_rc
    dL = -A^T dA A^T (strictly lower), D_rs = beta_r dL_rs:
                   dk_r += sum_s D_rs E_rs * k_s,  dk_s += sum_r D_rs E_rs * k_r,
                   dbeta_r += sum_s dL_rs sum_c k_rc k_sc E_rsc,
                   dg_jc += sum_{r >= j > s} D_rs k_rc k_sc E_rsc   (a rectangle sum per channel)
Each dg term is collected only where its decay carries g_jc (no cancelling identity).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kdiff.kernels.gdn.tile_ops import (channel_rectangle_sums, chunk_rows, decay, load_gate_rows,
                                         load_head_vec, load_rows, mm, pair_decays,
                                         store_head_vec, store_rows, unit_lower_inverse16)
from kdiff.kernels.gdn.varlen import ChunkLayout
from kdiff.kernels.gdn.wy import inverse_grad, store_inverse_block, store_utld, wy_value_grads

KDA_CHUNK = 16
# not tuned on a GPU: [16, 16, BK] pair tensors, as gla.py's chunk-parallel kernels
WARPS = {"kda_wy_fwd": 8, "kda_wy_bwd": 8}


@triton.jit
def _decayed_kkt(b_k, pair):
    """[BT, BT]: sum_c k_rc k_sc E_rsc (zero where the pair decay is)."""
    return tl.sum(b_k[:, None, :] * b_k[None, :, :] * pair, 2)


@triton.jit
def kda_wy_fwd_kernel(k, v, beta, gc, A, w, u, bounds, H, K, V,
                      BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    """A = (I + L)^-1 (fp32, stored as rows [tokens, H, 16]), W and Utld in one pass over
    the chunk's k. Grid (chunks, H); BT = 16."""
    i_c, h = tl.program_id(0), tl.program_id(1)
    start, end, r, valid = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = k.dtype.element_ty
    b_k = load_rows(k, start, end, H, h, K, 0, BT, BK).to(tl.float32)
    b_beta = load_head_vec(beta, start, end, H, h, BT)
    b_gc, _ = load_gate_rows(gc, start, end, H, h, K, BT, BK)
    strict = (r[:, None] > r[None, :]) & valid[:, None] & valid[None, :]
    L = tl.where(strict, _decayed_kkt(b_k, pair_decays(b_gc, valid, BT)) * b_beta[:, None], 0.0)
    b_A = unit_lower_inverse16(L)
    store_inverse_block(A, b_A, start, 0, end, H, h, BT)
    A_beta = b_A * b_beta[None, :]
    store_rows(w, mm(A_beta, b_k * decay(b_gc), DT), start, end, H, h, K, 0, BT, BK)
    store_utld(A_beta, v, u, start, end, H, h, V, BT, BV, DT)


@triton.jit
def kda_wy_bwd_kernel(k, v, beta, gc, A, hbuf, du, dk_part, dg_part, dk, dv, dbeta, dg, bounds,
                      H, K, V, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    """VJP of the stage (module docstring); adds the output/scan partials dk_part, dg_part
    (gla_grad_qk_kernel's, fp32) and stores dk, dv, dbeta and dg. Grid (chunks, H)."""
    i_c, h = tl.program_id(0), tl.program_id(1)
    start, end, r, valid = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = k.dtype.element_ty
    # KDA's results are checked by chunk.all_finite (its non-finite count is not used)
    b_A, b_beta, d_a, d_w, b_db, _ = wy_value_grads(A, beta, v, du, dv, hbuf, i_c, start,
                                                    end, H, h, K, V, BT, BK, BV, DT)
    b_k = load_rows(k, start, end, H, h, K, 0, BT, BK).to(tl.float32)
    b_gc, _ = load_gate_rows(gc, start, end, H, h, K, BT, BK)
    gamma = decay(b_gc)
    k_gamma = b_k * gamma
    kb = k_gamma * b_beta[:, None]
    d_a += mm(d_w, tl.trans(kb), DT)
    d_kb = mm(tl.trans(b_A), d_w, DT)                          # d(beta exp(gc) K)
    b_dk = load_rows(dk_part, start, end, H, h, K, 0, BT, BK) + d_kb * gamma * b_beta[:, None]
    b_db += tl.sum(d_kb * k_gamma, 1)
    # exp(gc_rc) in W carries g_jc for j <= r
    b_dg = load_rows(dg_part, start, end, H, h, K, 0, BT, BK) + tl.cumsum(d_kb * kb, 0,
                                                                           reverse=True)
    strict = (r[:, None] > r[None, :]) & valid[:, None] & valid[None, :]
    d_l = tl.where(strict, inverse_grad(b_A, d_a, DT), 0.0)
    pair = pair_decays(b_gc, valid, BT)                        # [r, s, c]
    b_db += tl.sum(d_l * _decayed_kkt(b_k, pair), 1)
    y = (d_l * b_beta[:, None])[:, :, None] * pair             # dL_rs dL_rs/d(k_rc k_sc)
    b_dk += tl.sum(y * b_k[None, :, :], 1) + tl.sum(y * b_k[:, None, :], 0)
    b_dg += channel_rectangle_sums(y * b_k[:, None, :] * b_k[None, :, :], BT)  # s < j <= r
    store_rows(dk, b_dk, start, end, H, h, K, 0, BT, BK)
    store_head_vec(dbeta, b_db, start, end, H, h, BT)
    store_rows(dg, b_dg, start, end, H, h, K, 0, BT, BK)


def kda_wy_forward(k, v, beta, gc, layout: ChunkLayout, BK: int, BV: int):
    """(A fp32 [tokens, H, 16], W like k, Utld like v)."""
    H, K = k.shape[2:]
    V = v.shape[-1]
    A = torch.empty(*k.shape[:3], layout.chunk_size, dtype=torch.float32, device=k.device)
    w = torch.empty_like(k)
    u = torch.empty_like(v)
    kda_wy_fwd_kernel[(layout.num_chunks, H)](k, v, beta, gc, A, w, u, layout.chunk_bounds, H, K,
                                              V, BT=layout.chunk_size, BK=BK, BV=BV,
                                              num_warps=WARPS["kda_wy_fwd"])
    return A, w, u


def kda_wy_backward(k, v, beta, gc, A, hbuf, du, dk_part, dg_part, layout: ChunkLayout,
                    BK: int, BV: int):
    """(dk, dv, dbeta, dg fp32 [B, T, H, K])."""
    H, K = k.shape[2:]
    V = v.shape[-1]
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    dbeta = torch.empty_like(beta)
    dg = torch.empty(k.shape, dtype=torch.float32, device=k.device)
    kda_wy_bwd_kernel[(layout.num_chunks, H)](
        k, v, beta, gc, A, hbuf, du, dk_part, dg_part, dk, dv, dbeta, dg, layout.chunk_bounds,
        H, K, V, BT=layout.chunk_size, BK=BK, BV=BV, num_warps=WARPS["kda_wy_bwd"])
    return dk, dv, dbeta, dg
