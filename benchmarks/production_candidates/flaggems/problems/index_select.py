"""FlagGems hunt: index_select"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, idx):
        return torch.index_select(x, 0, idx)


B, N, K = 64, 50, 20


def get_inputs():
    return [torch.randn(B, N), torch.randint(0, B, (K,))]


def get_init_inputs():
    return []
