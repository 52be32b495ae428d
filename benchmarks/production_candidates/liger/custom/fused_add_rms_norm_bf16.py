"""kdiff-control: Liger fused add + RMSNorm, bf16, casting mode llama"""

import torch
import torch.nn as nn
from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(hidden, dtype=torch.bfloat16) + 0.5)
        self.eps = eps

    def forward(self, x, r):
        return LigerFusedAddRMSNormFunction.apply(x, r, self.weight, self.eps)
