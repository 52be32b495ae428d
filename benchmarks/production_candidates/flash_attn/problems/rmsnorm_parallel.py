"""flash-attention hunt: x + x1 + residual, then RMSNorm under two weights (parallel blocks: one
normalisation, two outputs), zero-centred weights (1 + w), the sum returned (prenorm)"""

import torch
import torch.nn as nn

M, N = 24, 200
EPS = 1e-6


class Model(nn.Module):
    def forward(self, x, x1, residual, weight, weight1):
        s = x + x1 + residual
        xhat = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + EPS)
        return xhat * (1 + weight), xhat * (1 + weight1), s


def get_inputs():
    return [
        torch.randn(M, N),
        torch.randn(M, N),
        torch.randn(M, N),
        torch.randn(N) * 0.1,
        torch.randn(N) * 0.1,
    ]


def get_init_inputs():
    return []
