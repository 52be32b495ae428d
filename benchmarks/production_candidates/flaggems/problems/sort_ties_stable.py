"""FlagGems hunt: sort_ties_stable"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        v, i = torch.sort(x, dim=1, stable=True)
        return v, i


B, N = 8, 64


def get_inputs():
    return [torch.randint(-3, 4, (B, N)).float()]


def get_init_inputs():
    return []
