"""mamba hunt: SwiGLU, silu(x) * y of the two halves of the last axis"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, xy):
        x, y = xy.chunk(2, dim=-1)
        return F.silu(x) * y


def get_inputs():
    return [torch.randn(4, 16, 2 * 96)]


def get_init_inputs():
    return []
