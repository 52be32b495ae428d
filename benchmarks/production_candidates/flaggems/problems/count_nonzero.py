"""FlagGems hunt: count_nonzero"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.count_nonzero(x, 1)


B, N = 16, 300


def get_inputs():
    return [torch.randint(-1, 2, (B, N)).float()]


def get_init_inputs():
    return []
