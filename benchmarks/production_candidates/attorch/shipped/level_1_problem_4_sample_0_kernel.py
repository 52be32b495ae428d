"""
kdiff-control: attorch's Triton layer norm (LayerNormAutoGrad) for nn.LayerNorm over its trailing dimensions
"""
import torch.nn as nn
from attorch.layer_norm_layer import LayerNormAutoGrad


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        rows = x.reshape(x.shape[0], -1)  # the normalized dimensions are the trailing ones
        y = LayerNormAutoGrad.apply(rows, self.ln.weight.reshape(-1), self.ln.bias.reshape(-1),
                                    self.ln.eps, False)
        return y.reshape(x.shape)
