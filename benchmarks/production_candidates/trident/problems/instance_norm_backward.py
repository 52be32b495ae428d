"""Trident hunt: instance_norm_backward"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, weight, bias):
        return torch.nn.functional.instance_norm(x, weight=weight, bias=bias, eps=1e-5)


B, C, L = 4, 8, 40
KDIFF_BACKWARD = True


def get_inputs():
    return [torch.randn(B, C, L), torch.randn(C), torch.randn(C)]


def get_init_inputs():
    return []
