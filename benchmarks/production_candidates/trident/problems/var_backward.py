"""Trident hunt: var_backward"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.var(x, 1)


B, N = 16, 300
KDIFF_BACKWARD = True


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
