"""kdiff-control: Liger-Kernel's fused linear cross entropy (LigerFusedLinearCrossEntropyFunction, mean), bf16 LM head"""

import torch
import torch.nn as nn
from liger_kernel.ops.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyFunction


class ModelNew(nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.lm_head = nn.Linear(hidden, vocab, bias=False, dtype=torch.bfloat16)

    def forward(self, x, target):
        return LigerFusedLinearCrossEntropyFunction.apply(x, self.lm_head.weight, target)[0]
