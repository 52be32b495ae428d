"""FlagGems hunt: layer_norm"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, w, b):
        return torch.nn.functional.layer_norm(x, (N,), w, b)


B, N = 16, 300


def get_inputs():
    return [torch.randn(B, N), torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return []
