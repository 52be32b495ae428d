"""FlagGems hunt: max_dim"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        v, i = torch.max(x, 1)
        return v, i


B, N = 16, 300


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
