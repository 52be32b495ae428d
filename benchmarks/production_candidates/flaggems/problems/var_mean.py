"""FlagGems hunt: var_mean"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        v, m = torch.var_mean(x, 1)
        return v, m


B, N = 16, 300


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
