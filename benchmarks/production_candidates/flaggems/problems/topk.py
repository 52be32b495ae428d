"""FlagGems hunt: topk"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        v, i = torch.topk(x, 5, 1)
        return v, i


B, N = 16, 200


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
