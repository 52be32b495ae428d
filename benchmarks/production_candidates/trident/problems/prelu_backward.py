"""Trident hunt: prelu_backward"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, weight):
        return torch.nn.functional.prelu(x, weight)


B, C, L = 4, 16, 24
KDIFF_BACKWARD = True


def get_inputs():
    return [torch.randn(B, C, L), torch.rand(C)]


def get_init_inputs():
    return []
