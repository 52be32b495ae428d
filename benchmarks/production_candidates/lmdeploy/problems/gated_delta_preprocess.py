"""lmdeploy hunt: Gated DeltaNet's inputs prepared in one kernel (fp32): queries and keys
L2-normalised as fla's l2norm does (x / sqrt(sum x^2 + 1e-6)) and repeated from 2 key heads to
4 value heads, beta = sigmoid(b), g = A * softplus(a + dt_bias); four outputs"""

import torch
import torch.nn as nn
import torch.nn.functional as F

B, T, HK, RATIO, D = 2, 10, 2, 2, 32
EPS = 1e-6


def _l2norm(x):
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + EPS)


class Model(nn.Module):
    def forward(self, q, k, b, a, dt_bias, a_log_exp):
        q = _l2norm(q).repeat_interleave(RATIO, dim=-2)
        k = _l2norm(k).repeat_interleave(RATIO, dim=-2)
        return q, k, b.sigmoid(), a_log_exp * F.softplus(a + dt_bias)


def get_inputs():
    return [
        torch.randn(B, T, HK, D),
        torch.randn(B, T, HK, D),
        torch.randn(B, T, HK * RATIO),
        torch.randn(B, T, HK * RATIO),
        torch.randn(HK * RATIO),
        -torch.rand(HK * RATIO).exp(),
    ]


def get_init_inputs():
    return []
