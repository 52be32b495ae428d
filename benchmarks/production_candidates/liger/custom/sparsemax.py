"""
kdiff-control: Liger-Kernel's sparsemax (LigerSparsemaxFunction, last dimension)
"""
import torch.nn as nn
from liger_kernel.ops.sparsemax import LigerSparsemaxFunction


class ModelNew(nn.Module):
    def forward(self, x):
        return LigerSparsemaxFunction.apply(x, -1)
