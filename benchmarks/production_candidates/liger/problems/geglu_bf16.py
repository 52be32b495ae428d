"""Liger GEGLU at bf16: gelu(a, tanh) * b in bf16 torch, forward and its VJP by a and b"""

import torch
import torch.nn as nn
import torch.nn.functional as F

KDIFF_BACKWARD = True


class Model(nn.Module):
    def forward(self, a, b):
        return F.gelu(a, approximate="tanh") * b


def get_inputs():
    return [torch.randn(16, 256, dtype=torch.bfloat16), torch.randn(16, 256, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
