"""
kdiff-control: Liger-Kernel's Triton SiLU-and-multiply (LigerSiLUMulFunction) with a unit gate
"""
import torch
import torch.nn as nn
from liger_kernel.ops.swiglu import LigerSiLUMulFunction


class ModelNew(nn.Module):
    def forward(self, x):
        return LigerSiLUMulFunction.apply(x, torch.ones_like(x))
