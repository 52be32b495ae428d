"""kdiff-control: aiter rms_norm (ops/triton/normalization/rmsnorm.py)"""

import aiter_cpu as A
import torch
import torch.nn as nn

EPS = 1e-6


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n, dtype=torch.float16) + 0.5)

    def forward(self, x):
        return A.load("normalization.rmsnorm").rms_norm(x, self.weight, EPS)
