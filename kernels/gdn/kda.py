"""The WY stage of KDA (Kimi Delta Attention: per-channel gate g [B, T, H, K] with the delta
rule), forward and VJP, for chunks of C = 16 or 64 tokens cut into sub-chunks of 16:

    S_t = (I - beta_t k_t k_t^T) diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T,  o_t = scale S_t^T q_t

(the decay first, then the delta rule: reference.gated_recurrence's convention). Per chunk,
with gc the per-channel chunk-local cumulative log-decay (fp64) and E_rsc = exp(gc_rc - gc_sc):

    L_rs = beta_r sum_c k_rc k_sc E_rsc   (s < r),   A = (I + L)^-1
    W    = A diag(beta) (exp(gc) * K),     Utld = A diag(beta) V

so that the chunk's corrected values are U = Utld - W S for its initial state S, as for Gated
DeltaNet (wy.py), with the scalar decays replaced channel by channel. L is GLA's score matrix
with q replaced by beta k (scale 1, strictly lower), and is formed by the same 16 x 16 blocks
(gla.py): diagonal blocks pair by pair (tile_ops.pair_decays: exponent <= 0, never
exp(gc_r) exp(-gc_s)), the blocks left of sub-chunk i as one product
(K_i exp(gc_i - ref_i)) (K_<i exp(ref_i - gc_<i))^T with ref_i = gc at the first row of
sub-chunk i. Exponent argument (as gla.py's): g <= 0, so gc is non-increasing along the chunk;
for r in sub-chunk i and s < row0_i <= r, gc_r <= ref_i <= gc_s, so gc_r - ref_i <= 0 and
ref_i - gc_s <= 0: both factors are in (0, 1], each at least the exact decay, and exp(gc) <= 1
in W: nothing overflows that the recurrence does not, nor underflows where the exact decay
does not (up to the fp64 cumsum's rounding, ~log2(C) 2^-53 |gc|: gla.py's docstring).
A = (I + L)^-1 by row blocks of 16 (wy.store_inverse_rows): A_ii by forward substitution,
then A_i,<i = -A_ii L_i,<i A_<i,<i from the rows already stored. The rest of the pipeline is
GLA's (gla.py) with DELTA: its state scans correct U and carry -W^T dU, its output and grad_qk
kernels read U in place of V.

VJP, given dU (the backward scan's) and S:
    dW = -dU S^T;  dv = beta (A^T dU);  dA = dU (beta V)^T + dW Kb^T,  Kb = beta exp(gc) * K
    dKb = A^T dW:  dk += beta exp(gc) * dKb,  dbeta += sum_c exp(gc) k dKb,
                   dg_jc += sum_{r >= j} (Kb * dKb)_rc
    dL = -A^T dA A^T (strictly lower), stored [tokens, H, C] fp32; then L's own VJP is GLA's
    score VJP (gla_grad_scores_kernel, by sub-chunk blocks) with q = beta k, k = k, D = dL:
                   G_r = d(beta k)_r = sum_s dL_rs E_rs * k_s,  dk_r += beta_r G_r,
                   dbeta_r += k_r . G_r,  dk_s += sum_r dL_rs E_rs * beta_r k_r,
                   dg_jc += sum_{r >= j > s} dL_rs beta_r k_rc k_sc E_rsc   (rectangle sums)
Each dg term is collected only where its decay carries g_jc (no cancelling identity).
"""
from __future__ import annotations

import torch
import triton.language as tl

from kdiff.kernels.gdn.jit import shape_jit
from kdiff.kernels.gdn.tile_ops import (
    chunk_rows,
    decay,
    keys_before,
    load_head_vec,
    load_rows,
    mm,
    pair_decays,
    query_factor,
    store_head_vec,
    store_rows,
    sub_chunk,
    unit_lower_inverse16,
)
from kdiff.kernels.gdn.varlen import ChunkLayout
from kdiff.kernels.gdn.wy import (
    inverse_grad,
    load_inverse,
    store_inverse_rows,
    store_products,
    wy_value_grads,
)

KDA_CHUNK = 64  # chunks of 16 also supported (chunk_kda(chunk_size=16))
# not tuned on a GPU: [16, 16, BK] pair tensors, as gla.py's chunk-parallel kernels
WARPS = {"kda_wy_fwd": 8, "kda_wy_bwd": 8}


@shape_jit
def kda_wy_fwd_kernel(k, v, beta, gc, A, w, u, bounds, H, K, V,
                      BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, BC: tl.constexpr):
    """A = (I + L)^-1 (fp32, stored as rows [tokens, H, BT]) by row blocks of BC, then W and
    Utld. Row block i of L: the diagonal block pair by pair, the blocks left of it as one
    product of the sub-chunk reference factors (module docstring). Grid (chunks, H)."""
    i_c, h = tl.program_id(0), tl.program_id(1)
    start, end, _, _ = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = k.dtype.element_ty
    rc = tl.arange(0, BC)
    for i in range(tl.cdiv(end - start, BC)):
        row0, valid, b_gc, ref = sub_chunk(gc, start, end, i, H, h, K, BC, BK)
        b_k = load_rows(k, row0, end, H, h, K, 0, BC, BK).to(tl.float32)
        b_beta = load_head_vec(beta, row0, end, H, h, BC)
        strict = (rc[:, None] > rc[None, :]) & valid[:, None] & valid[None, :]
        pair = pair_decays(b_gc, valid, BC)
        l_ii = tl.where(strict, tl.sum(b_k[:, None, :] * b_k[None, :, :] * pair, 2), 0.0)
        kend = tl.minimum(row0, end)
        l_off = tl.zeros([BC, BT], dtype=tl.float32)
        if BT > BC:
            l_off = mm(b_k * query_factor(b_gc, ref, valid),
                       tl.trans(keys_before(k, gc, start, kend, ref, H, h, K, BT, BK)), DT)
        store_inverse_rows(A, unit_lower_inverse16(l_ii * b_beta[:, None]),
                           l_off * b_beta[:, None], i, row0, start, kend, end, H, h, BT, BC)
    tl.debug_barrier()
    b_A = load_inverse(A, start, end, H, h, BT)
    b_beta = load_head_vec(beta, start, end, H, h, BT)
    b_kg = (load_rows(k, start, end, H, h, K, 0, BT, BK).to(tl.float32)
            * decay(load_rows(gc, start, end, H, h, K, 0, BT, BK)))
    A_beta = b_A * b_beta[None, :]
    store_rows(w, mm(A_beta, b_kg, DT), start, end, H, h, K, 0, BT, BK)
    store_products(A_beta, v, u, start, end, H, h, V, BT, BV, DT)


@shape_jit
def kda_wy_bwd_kernel(k, v, beta, gc, A, hbuf, du, dk_part, dg_part, dk, dv, dbeta, dg, dl,
                      bounds, H, K, V, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    """VJP of the stage but L's own (module docstring); adds the output/scan partials
    dk_part, dg_part (gla_grad_qk_kernel's, fp32), stores the partials dk, dbeta, dg (fp32),
    dv, and dL (strictly lower, [tokens, H, BT] fp32) for gla_grad_scores_kernel.
    Grid (chunks, H)."""
    i_c, h = tl.program_id(0), tl.program_id(1)
    start, end, r, valid = chunk_rows(bounds, i_c, BT)
    DT: tl.constexpr = k.dtype.element_ty
    # KDA's results are checked by chunk.fallback_flag (its non-finite count is not used)
    b_A, b_beta, d_a, d_w, b_db, _ = wy_value_grads(A, beta, v, du, dv, hbuf, i_c, start,
                                                    end, H, h, K, V, BT, BK, BV, DT)
    b_k = load_rows(k, start, end, H, h, K, 0, BT, BK).to(tl.float32)
    gamma = decay(load_rows(gc, start, end, H, h, K, 0, BT, BK))
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
    store_rows(dl, tl.where(strict, inverse_grad(b_A, d_a, DT), 0.0), start, end, H, h, BT, 0,
               BT, BT)
    store_rows(dk, b_dk, start, end, H, h, K, 0, BT, BK)
    store_head_vec(dbeta, b_db, start, end, H, h, BT)
    store_rows(dg, b_dg, start, end, H, h, K, 0, BT, BK)


def kda_wy_forward(k, v, beta, gc, layout: ChunkLayout, BK: int, BV: int, BC: int):
    """(A fp32 [tokens, H, C], W like k, Utld like v)."""
    H, K = k.shape[2:]
    V = v.shape[-1]
    A = torch.empty(*k.shape[:3], layout.chunk_size, dtype=torch.float32, device=k.device)
    w = torch.empty_like(k)
    u = torch.empty_like(v)
    kda_wy_fwd_kernel[(layout.num_chunks, H)](k, v, beta, gc, A, w, u, layout.chunk_bounds, H, K,
                                              V, BT=layout.chunk_size, BK=BK, BV=BV, BC=BC,
                                              num_warps=WARPS["kda_wy_fwd"])
    return A, w, u


def kda_wy_backward(k, v, beta, gc, A, hbuf, du, dk_part, dg_part, layout: ChunkLayout,
                    BK: int, BV: int):
    """(dk fp32 [tokens, H, K], dv, dbeta fp32 [B, T, H], dg fp32 [B, T, H, K], dL fp32
    [tokens, H, C]): dk, dbeta and dg without L's own terms (gla.gla_backward adds them)."""
    H, K = k.shape[2:]
    V = v.shape[-1]
    part = dict(dtype=torch.float32, device=k.device)
    dk = torch.empty(k.shape[0] * k.shape[1], H, K, **part)
    dv = torch.empty_like(v)
    dbeta = torch.empty(beta.shape, **part)
    dg = torch.empty(k.shape, **part)
    dl = torch.empty(*k.shape[:3], layout.chunk_size, **part)
    kda_wy_bwd_kernel[(layout.num_chunks, H)](
        k, v, beta, gc, A, hbuf, du, dk_part, dg_part, dk, dv, dbeta, dg, dl,
        layout.chunk_bounds, H, K, V, BT=layout.chunk_size, BK=BK, BV=BV,
        num_warps=WARPS["kda_wy_bwd"])
    return dk, dv, dbeta, dg, dl
