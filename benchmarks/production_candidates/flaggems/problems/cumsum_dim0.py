"""FlagGems hunt: cumsum_dim0"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 0)


B, N = 300, 16


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
