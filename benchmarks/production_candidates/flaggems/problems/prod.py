"""FlagGems hunt: prod"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.prod(x, 1)


B, N = 64, 24


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
