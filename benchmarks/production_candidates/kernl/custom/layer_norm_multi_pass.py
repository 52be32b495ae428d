"""kdiff-control: kernl layer_norm, the multi_pass kernel"""

import torch.nn as nn
from kernl.implementations.layer_norm import _layer_norm_fwd_fused_multi_pass, layer_norm


class ModelNew(nn.Module):
    def forward(self, x, weight, bias):
        return layer_norm(x, weight, bias, 1e-5, implementation=_layer_norm_fwd_fused_multi_pass)
