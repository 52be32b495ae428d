"""lightllm hunt: rotary_emb"""

import torch
import torch.nn as nn


def rotate(x, cos, sin):
    x0, x1 = x.chunk(2, dim=-1)
    cos, sin = cos[:, None, :], sin[:, None, :]
    return torch.cat((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)


class Model(nn.Module):
    def forward(self, q, k, cos, sin):
        # the class lightllm's launcher serves: grouped query heads (HQ a multiple of HK), and
        # a head dim that is a power of two (its block over the head dim is the head dim)
        assert q.shape[1] % k.shape[1] == 0 and q.shape[-1] & (q.shape[-1] - 1) == 0
        return rotate(q, cos, sin), rotate(k, cos, sin)


T, HQ, HK, D = 40, 8, 2, 32


def get_inputs():
    angles = torch.outer(
        torch.arange(T, dtype=torch.float32),
        10000.0 ** (-torch.arange(D // 2, dtype=torch.float32) / (D // 2)),
    )
    return [torch.randn(T, HQ, D), torch.randn(T, HK, D), angles.cos(), angles.sin()]


def get_init_inputs():
    return []
