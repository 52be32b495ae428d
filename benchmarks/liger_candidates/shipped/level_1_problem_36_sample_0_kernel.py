"""
kdiff-control: Liger-Kernel's Triton RMSNorm (LigerRMSNormFunction, unit weight) over dim 1
"""
import torch
import torch.nn as nn
from liger_kernel.ops.rms_norm import LigerRMSNormFunction


class ModelNew(nn.Module):
    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.num_features, self.eps = num_features, eps

    def forward(self, x):
        # Liger normalises the last dimension: move the features there and back.
        rows = x.movedim(1, -1).contiguous()
        weight = torch.ones(self.num_features, dtype=x.dtype, device=x.device)
        y = LigerRMSNormFunction.apply(rows.reshape(-1, self.num_features), weight, self.eps,
                                       0.0, "llama", False)
        return y.reshape(rows.shape).movedim(-1, 1).contiguous()
