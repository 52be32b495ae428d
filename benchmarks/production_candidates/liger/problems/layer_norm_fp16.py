"""Liger layer norm at fp16: F.layer_norm in fp16 torch (statistics in fp32 inside), forward
and its VJP by x, the weight and the bias"""

import torch
import torch.nn as nn
import torch.nn.functional as F

KDIFF_BACKWARD = True
N = 256


class Model(nn.Module):
    def forward(self, x, w, b):
        return F.layer_norm(x, (N,), w, b, 1e-6)


def get_inputs():
    return [
        torch.randn(16, N, dtype=torch.float16),
        (torch.rand(N) + 0.5).half(),
        torch.randn(N, dtype=torch.float16),
    ]


def get_init_inputs():
    return []
