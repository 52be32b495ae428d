"""flashinfer hunt: rms_norm (weight times x over its root mean square)"""

import torch
import torch.nn as nn

EPS = 1e-6


class Model(nn.Module):
    def forward(self, x, weight):
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS))


T, N = 32, 200


def get_inputs():
    return [torch.randn(T, N), torch.randn(N)]


def get_init_inputs():
    return []
