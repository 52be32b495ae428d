"""
kdiff-control: the Triton tutorials' layer norm (05-layer-norm.py, LayerNorm.forward) for nn.LayerNorm over its trailing dimensions
"""
import torch.nn as nn
from tutorial_layer_norm import LayerNorm


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        rows = x.reshape(x.shape[0], -1)  # the normalized dimensions are the trailing ones
        y = LayerNorm.apply(rows, None, self.ln.weight.reshape(-1), self.ln.bias.reshape(-1),
                            self.ln.eps)
        return y.reshape(x.shape)
