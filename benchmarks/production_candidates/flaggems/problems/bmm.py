"""FlagGems hunt: bmm"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


G, M, K, N = 3, 32, 48, 24


def get_inputs():
    return [torch.randn(G, M, K), torch.randn(G, K, N)]


def get_init_inputs():
    return []
