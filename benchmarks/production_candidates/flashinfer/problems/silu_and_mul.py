"""flashinfer hunt: silu_and_mul (silu of the first half times the second)"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        gate, up = x.chunk(2, dim=-1)
        return torch.nn.functional.silu(gate) * up


T, N = 64, 96


def get_inputs():
    return [torch.randn(T, 2 * N)]


def get_init_inputs():
    return []
