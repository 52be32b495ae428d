"""
kdiff-control: flash-linear-attention's Triton RMSNorm (fla.modules.layernorm.rms_norm) over dim 1
"""
import torch.nn as nn
from fla.modules.layernorm import rms_norm


class ModelNew(nn.Module):
    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.num_features, self.eps = num_features, eps

    def forward(self, x):
        rows = x.movedim(1, -1)  # fla normalises the last dimension
        return rms_norm(rows, None, None, eps=self.eps).movedim(-1, 1).contiguous()
