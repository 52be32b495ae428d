"""Layer normalization over the last dimension, judged on its VJP too (KDIFF_BACKWARD)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x):
        return self.ln(x)


batch_size = 32
features = 256
KDIFF_BACKWARD = True


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
