"""Trident hunt: argmax"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.argmax(x, 1)


B, N = 16, 100


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
