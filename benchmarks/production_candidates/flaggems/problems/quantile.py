"""FlagGems hunt: quantile"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, q):
        return torch.quantile(x, q, 1)


B, N = 16, 100


def get_inputs():
    return [torch.randn(B, N), torch.tensor([0.1, 0.5, 0.9])]


def get_init_inputs():
    return []
