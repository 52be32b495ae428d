"""FlagGems hunt: mm"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


M, K, N = 48, 80, 40


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
