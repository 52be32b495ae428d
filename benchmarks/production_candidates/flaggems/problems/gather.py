"""FlagGems hunt: gather"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, idx):
        return torch.gather(x, 1, idx)


B, N, K = 16, 100, 30


def get_inputs():
    return [torch.randn(B, N), torch.randint(0, N, (B, K))]


def get_init_inputs():
    return []
