"""kdiff-control: Liger layer norm (LigerLayerNormFunction), fp16"""

import torch.nn as nn
from liger_kernel.ops.layer_norm import LigerLayerNormFunction


class ModelNew(nn.Module):
    def forward(self, x, w, b):
        return LigerLayerNormFunction.apply(x, w, b, 1e-6)
