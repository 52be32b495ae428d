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
        seqs = [(b, 0, T) for b in range(B)]
    else:
        if B != 1:
            raise ValueError("packed sequences (cu_seqlens) need batch size 1")
        cu = [int(x) for x in cu_seqlens.tolist()]
        seqs = [(0, cu[n], cu[n + 1]) for n in range(len(cu) - 1)]
    lengths = [eos - bos for _, bos, eos in seqs]
    per_channel = g.dim() == 4
    # The sequences are independent: all that have not ended step together, one token each per
    # step, so that the oracle costs max(length) steps of batched operations rather than B x T
    # steps of small ones (kdiff's traced float64 oracle at batch_size = 1000 had not finished
    # in 550 s). An ended sequence takes no part in a step: its state is left as it was, and
    # nothing of it enters the graph (a garbage step would put 0 x NaN into the gradients).
    S = (initial_state.to(q.dtype, copy=True) if initial_state is not None
         else q.new_zeros(len(seqs), H, K, V))
    rows, index_b, index_t = [], [], []
    for step in range(max(lengths, default=0)):
        live = [n for n, length in enumerate(lengths) if step < length]
        batch = [seqs[n][0] for n in live]
        token = [seqs[n][1] + step for n in live]
        at = (torch.tensor(batch, dtype=torch.long, device=q.device),
              torch.tensor(token, dtype=torch.long, device=q.device))
        every = len(live) == len(seqs)
        live_rows = None if every else torch.tensor(live, dtype=torch.long, device=q.device)
        St = S if every else S[live_rows]
        decay = g[at].exp()
        St = St * (decay[..., None] if per_channel else decay[..., None, None])
        if beta is not None:
            kt = k[at]
            correction = torch.einsum("nhk,nhkv->nhv", kt, St)  # k_t^T D_t
            St = St + beta[at][..., None, None] * torch.einsum("nhk,nhv->nhkv", kt,
                                                                v[at] - correction)
        else:
            St = St + torch.einsum("nhk,nhv->nhkv", k[at], v[at])
        rows.append(scale * torch.einsum("nhk,nhkv->nhv", q[at], St))
        index_b += batch
        index_t += token
        S = St if every else S.index_put((live_rows,), St)
    o = q.new_zeros(B, T, H, V)
    if rows:
        o = o.index_put((torch.tensor(index_b, dtype=torch.long, device=q.device),
                         torch.tensor(index_t, dtype=torch.long, device=q.device)),
                        torch.cat(rows))
    return o, S


def gated_delta_rule_reference(q, k, v, g, beta, scale=None, initial_state=None, cu_seqlens=None):
    """Gated DeltaNet: scalar gate g [B, T, H], delta rule with beta [B, T, H]."""
    return gated_recurrence(q, k, v, g, beta, scale, initial_state, cu_seqlens)
