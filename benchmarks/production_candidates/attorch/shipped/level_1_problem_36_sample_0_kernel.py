"""
kdiff-control: attorch's Triton RMSNorm (RMSNormAutoGrad, no weight) over dim 1
"""
import torch.nn as nn
from attorch.rms_norm_layer import RMSNormAutoGrad


class ModelNew(nn.Module):
    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        rows = x.movedim(1, -1).contiguous()  # attorch normalises the last dimension
        return RMSNormAutoGrad.apply(rows, None, self.eps).movedim(-1, 1).contiguous()
