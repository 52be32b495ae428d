"""FlagGems hunt: cummin_ties"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        v, i = torch.cummin(x, 1)
        return v, i


B, N = 8, 200


def get_inputs():
    return [torch.randint(-3, 4, (B, N)).float()]


def get_init_inputs():
    return []
