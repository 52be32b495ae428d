"""Trident hunt: var_correction0"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.var(x, 1, correction=0)


B, N = 16, 300


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
