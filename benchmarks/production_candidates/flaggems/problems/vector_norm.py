"""FlagGems hunt: vector_norm"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.linalg.vector_norm(x, 2, 1)


B, N = 16, 300


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
