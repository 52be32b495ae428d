"""lightllm hunt: gelu_and_mul"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        gate, up = x.chunk(2, dim=-1)
        return torch.nn.functional.gelu(gate, approximate="tanh") * up


T, N = 64, 96


def get_inputs():
    return [torch.randn(T, 2 * N)]


def get_init_inputs():
    return []
