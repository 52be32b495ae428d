"""
kdiff-control: Liger-Kernel's Triton group norm with one channel a group, for nn.InstanceNorm2d
"""
import torch
import torch.nn as nn
from liger_kernel.ops.group_norm import LigerGroupNormFunction


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.num_features = num_features

    def forward(self, x):
        ones = torch.ones(self.num_features, dtype=x.dtype, device=x.device)
        return LigerGroupNormFunction.apply(x, ones, torch.zeros_like(ones), self.num_features,
                                            self.num_features, 1e-5)
