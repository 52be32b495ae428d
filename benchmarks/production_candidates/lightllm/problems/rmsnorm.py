"""lightllm hunt: rmsnorm"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, weight):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps=1e-6)


T, N = 32, 200


def get_inputs():
    return [torch.randn(T, N), torch.rand(N)]


def get_init_inputs():
    return []
