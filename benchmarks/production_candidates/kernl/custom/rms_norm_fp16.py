"""kdiff-control: kernl layer_norm as RMSNorm (single pass)"""

import torch.nn as nn
from kernl.implementations.layer_norm import layer_norm


class ModelNew(nn.Module):
    def forward(self, x, weight):
        return layer_norm(x, weight, None, 1e-5, use_rms_norm=True)
