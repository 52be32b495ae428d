"""
kdiff-control: Liger-Kernel's RoPE kernel (LigerRopeFunction, rotate-half form)
"""
import torch.nn as nn
from liger_kernel.ops.rope import LigerRopeFunction


class ModelNew(nn.Module):
    def forward(self, q, k, cos, sin):
        return LigerRopeFunction.apply(q, k, cos, sin)
