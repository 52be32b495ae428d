"""
kdiff-control: flash-linear-attention's Triton layer norm (fla.modules.layernorm.layer_norm) with nn.LayerNorm's parameters
"""
import torch.nn as nn
from fla.modules.layernorm import layer_norm


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        return layer_norm(x, self.ln.weight, self.ln.bias, eps=self.ln.eps)
