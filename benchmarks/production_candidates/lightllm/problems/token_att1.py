"""lightllm hunt: token_att1 (decode attention scores through a request-to-token table)"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Scaled scores q . k of each request's one query against its cached keys, the keys found
    through the request's row of a token table; packed as (heads, tokens of all requests)."""

    def forward(self, q, k, req_to_tokens, req_idx, start, seqlen):
        # the class lightllm's launcher serves: grouped query heads (a multiple of the key
        # heads) and a head dim it asserts is one of 16, 32, 64, 128, 256
        assert q.shape[1] % k.shape[1] == 0 and q.shape[-1] in (16, 32, 64, 128, 256)
        assert req_to_tokens.shape[1] >= int(seqlen.max())  # each request's tokens are in its row
        group = q.shape[1] // k.shape[1]
        out = torch.empty(q.shape[1], int(seqlen.sum()), dtype=q.dtype)
        for b, (r, s, n) in enumerate(zip(req_idx.tolist(), start.tolist(), seqlen.tolist())):
            keys = k[req_to_tokens[r, :n].long()].repeat_interleave(group, 1)  # (n, H, D)
            out[:, s : s + n] = torch.einsum("hd,nhd->hn", q[b], keys) / q.shape[-1] ** 0.5
        return out


H, HK, D = 4, 2, 32
SEQLENS = [20, 45, 3]
SLOTS, MAX_LEN = 128, 64


def get_inputs():
    g = torch.Generator().manual_seed(0)
    table = torch.stack([torch.randperm(SLOTS, generator=g)[:MAX_LEN] for _ in SEQLENS])
    seqlen = torch.tensor(SEQLENS, dtype=torch.int32)
    start = torch.cumsum(seqlen, 0, dtype=torch.int32) - seqlen
    req_idx = torch.tensor([2, 0, 1], dtype=torch.int32)
    return [
        torch.randn(len(SEQLENS), H, D),
        torch.randn(SLOTS, HK, D),
        table.to(torch.int32),
        req_idx,
        start,
        seqlen,
    ]


def get_init_inputs():
    return []
