"""lightning-attention hunt: lightning_attn2 (causal linear attention with per-head decay
exp(-slope * (i - j)), ALiBi's slopes), bf16 q, k, v, as lightning_attn's own reference
(`linear_attn`: scores and decayed scores rounded to bf16)"""

import math

import torch
import torch.nn as nn

B, H, N, D, E = 1, 2, 100, 32, 32


def alibi_slopes(h):
    """ALiBi's slopes: a geometric series for a power of two heads, else that of the power of
    two below it and every other one of twice that"""
    if math.log2(h).is_integer():
        start = 2 ** (-(2 ** -(math.log2(h) - 3)))
        return [start * start**i for i in range(h)]
    below = 2 ** math.floor(math.log2(h))
    return alibi_slopes(below) + alibi_slopes(2 * below)[0::2][: h - below]


def slopes(h):
    return torch.tensor(alibi_slopes(h)).reshape(h, 1, 1)


class Model(nn.Module):
    def forward(self, q, k, v):
        # the class lightning_attn's kernels serve: head dims powers of two (each
        # block over a head dim is the head dim)
        assert all(d & (d - 1) == 0 for d in (q.shape[-1], v.shape[-1]))
        n = q.shape[2]
        i = torch.arange(n)
        distance = (i[:, None] - i[None, :]).float()
        decay = torch.where(distance >= 0, torch.exp(-slopes(q.shape[1]) * distance.clamp(min=0)), 0.0)
        qk = torch.matmul(q, k.transpose(2, 3))
        qk = (qk.float() * decay).to(q.dtype)
        return torch.matmul(qk, v)


def get_inputs():
    return [torch.randn(B, H, N, D).bfloat16() / 10, torch.randn(B, H, N, D).bfloat16() / 10,
            torch.randn(B, H, N, E).bfloat16() / 10]


def get_init_inputs():
    return []
