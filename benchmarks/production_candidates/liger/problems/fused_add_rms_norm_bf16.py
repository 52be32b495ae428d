"""Liger fused residual add + RMSNorm at bf16: Llama's block in bf16 torch (HF's LlamaRMSNorm:
the statistics in fp32, the row rounded to bf16 before the bf16 weight)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(hidden, dtype=torch.bfloat16) + 0.5)
        self.eps = eps

    def forward(self, x, r):
        h = x + r
        hf = h.float()
        y = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * y.to(torch.bfloat16), h


batch_size = 16
hidden = 256
eps = 1e-6


def get_inputs():
    return [
        torch.randn(batch_size, hidden, dtype=torch.bfloat16),
        torch.randn(batch_size, hidden, dtype=torch.bfloat16),
    ]


def get_init_inputs():
    return [hidden, eps]
