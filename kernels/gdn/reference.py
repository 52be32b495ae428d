"""The oracle: the gated linear recurrence family, stepped one token at a time, written from
the equations and nothing else (no chunking, no WY representation, no triangular inverse).

For each head, with state S in R^{K x V}:

    D_t = diag(exp(g_t)) S_{t-1}                       (g_t a scalar per head, or one per key channel)
    S_t = D_t - beta_t k_t (k_t^T D_t) + beta_t k_t v_t^T   (delta rule)
    S_t = D_t + k_t v_t^T                                   (no delta rule: GLA / simple GLA)
    o_t = scale * S_t^T q_t

Gated DeltaNet is the scalar gate with the delta rule; KDA the per-channel gate with it;
GLA the per-channel gate without it; simple GLA (Mamba-2's SSD form) the scalar gate without it.
Called on float64 tensors it is the float64 oracle, and autograd through it gives the exact
(to float64) training gradients that the Triton backward must reproduce.
"""
from __future__ import annotations

import torch


def gated_recurrence(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                     beta: torch.Tensor | None, scale: float | None = None,
                     initial_state: torch.Tensor | None = None,
                     cu_seqlens: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """q, k [B, T, H, K]; v [B, T, H, V]; g [B, T, H] or [B, T, H, K] (log-space decay);
    beta [B, T, H] (None: no delta rule); initial_state [N, H, K, V]; cu_seqlens [N + 1]
    (then B == 1 and the N sequences are packed along T).

    Returns (o [B, T, H, V], final_state [N, H, K, V]), in the dtype of q."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    scale = K ** -0.5 if scale is None else scale
    if cu_seqlens is None:
        bounds = [(b, 0, T) for b in range(B)]
    else:
        if B != 1:
            raise ValueError("packed sequences (cu_seqlens) need batch size 1")
        cu = [int(x) for x in cu_seqlens.tolist()]
        bounds = [(0, cu[n], cu[n + 1]) for n in range(len(cu) - 1)]
    per_channel = g.dim() == 4
    outputs = []
    finals = []
    for n, (b, bos, eos) in enumerate(bounds):
        if initial_state is not None:
            S = initial_state[n].to(q.dtype)
        else:
            S = q.new_zeros(H, K, V)
        for t in range(bos, eos):
            decay = g[b, t].exp()
            S = S * (decay[..., None] if per_channel else decay[:, None, None])
            if beta is not None:
                kt = k[b, t]
                correction = torch.einsum("hk,hkv->hv", kt, S)  # k_t^T D_t
                S = S + beta[b, t][:, None, None] * torch.einsum(
                    "hk,hv->hkv", kt, v[b, t] - correction)
            else:
                S = S + torch.einsum("hk,hv->hkv", k[b, t], v[b, t])
            outputs.append((b, t, scale * torch.einsum("hk,hkv->hv", q[b, t], S)))
        finals.append(S)
    o = q.new_zeros(B, T, H, V)
    rows = torch.stack([x for _, _, x in outputs]) if outputs else o.new_zeros(0, H, V)
    index_b = torch.tensor([b for b, _, _ in outputs], dtype=torch.long, device=q.device)
    index_t = torch.tensor([t for _, t, _ in outputs], dtype=torch.long, device=q.device)
    o = o.index_put((index_b, index_t), rows)
    return o, torch.stack(finals)


def gated_delta_rule_reference(q, k, v, g, beta, scale=None, initial_state=None, cu_seqlens=None):
    """Gated DeltaNet: scalar gate g [B, T, H], delta rule with beta [B, T, H]."""
    return gated_recurrence(q, k, v, g, beta, scale, initial_state, cu_seqlens)
