"""FlagGems hunt: argmin"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.argmin(x, 1)


B, N = 16, 300


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
