"""
kdiff-control: Liger-Kernel's GEGLU kernel (LigerGELUMulFunction, tanh GELU) with a unit gate, for minGPT's tanh GELU
"""
import torch
import torch.nn as nn
from liger_kernel.ops.geglu import LigerGELUMulFunction


class ModelNew(nn.Module):
    def forward(self, x):
        return LigerGELUMulFunction.apply(x, torch.ones_like(x))
