"""Trident hunt: cosine_similarity_backward"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x1, x2):
        return torch.nn.functional.cosine_similarity(x1, x2, dim=1)


B, N = 16, 64
KDIFF_BACKWARD = True


def get_inputs():
    return [torch.randn(B, N), torch.randn(B, N)]


def get_init_inputs():
    return []
