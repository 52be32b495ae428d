"""kdiff-control: kernl layer_norm, the xformers kernel"""

import torch.nn as nn
from kernl.implementations.layer_norm import layer_norm, layer_norm_xformers


class ModelNew(nn.Module):
    def forward(self, x, weight, bias):
        return layer_norm(x, weight, bias, 1e-5, implementation=layer_norm_xformers)
