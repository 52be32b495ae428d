"""kdiff-control: aiter rmsnorm2d_fwd_with_dynamicquant (ops/triton/normalization/rmsnorm.py)"""

import aiter_cpu as A
import torch
import torch.nn as nn

EPS = 1e-6


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n, dtype=torch.bfloat16) + 0.5)

    def forward(self, x):
        out = torch.empty(x.shape, dtype=torch.int8, device=x.device)
        scale = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
        rmsnorm = A.load("normalization.rmsnorm")
        rmsnorm.rmsnorm2d_fwd_with_dynamicquant(out, x, scale, self.weight, EPS)
        return out, scale
