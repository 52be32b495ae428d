"""FlagGems hunt: group_norm"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, g):
        super().__init__()
        self.g = g

    def forward(self, x, w, b):
        return torch.nn.functional.group_norm(x, self.g, w, b)


B, C, L, G = 4, 8, 50, 2


def get_inputs():
    return [torch.randn(B, C, L), torch.randn(C), torch.randn(C)]


def get_init_inputs():
    return [G]
