"""unsloth hunt: Hugging Face's rotary embedding (rotate_half) of q and k together, grouped
query attention (fewer k heads), positions 0..S-1, cos and sin built from the sizes as Llama's
rotary module builds them"""

import torch
import torch.nn as nn

BATCH, HEADS_Q, HEADS_K, SEQ, DIM, THETA = 3, 4, 2, 16, 64, 10000.0


def cos_sin(seq, dim, dtype):
    """Llama's cos and sin: (seq, dim), each half the other's copy."""
    inv_freq = 1.0 / THETA ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    freqs = torch.outer(torch.arange(seq, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def forward(self, q, k):
        # the class unsloth's kernel serves: grouped query attention, no more k heads than q's
        # (its grid is over q's heads)
        assert k.shape[1] <= q.shape[1]
        cos, sin = cos_sin(q.shape[2], q.shape[3], q.dtype)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def get_inputs():
    return [torch.randn(BATCH, HEADS_Q, SEQ, DIM), torch.randn(BATCH, HEADS_K, SEQ, DIM)]


def get_init_inputs():
    return []
