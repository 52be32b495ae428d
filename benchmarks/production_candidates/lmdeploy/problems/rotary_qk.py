"""lmdeploy hunt: rotary embedding of queries and keys (rotate-half style, cos and sin given
per position over the full head dim), 7 query heads and 2 key heads, fp16"""

import torch
import torch.nn as nn

S, HQ, HK, D = 10, 7, 2, 64


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def forward(self, q, k, cos, sin):
        c, s = cos[:, None, :], sin[:, None, :]
        return q * c + _rotate_half(q) * s, k * c + _rotate_half(k) * s


def get_inputs():
    inv = 10000.0 ** (-torch.arange(D // 2, dtype=torch.float32) / (D // 2))
    angles = torch.outer(torch.arange(S, dtype=torch.float32), inv)
    angles = torch.cat((angles, angles), dim=-1)
    q = torch.randn(S, HQ, D, dtype=torch.float16)
    k = torch.randn(S, HK, D, dtype=torch.float16)
    return [q, k, angles.cos().half(), angles.sin().half()]


def get_init_inputs():
    return []
