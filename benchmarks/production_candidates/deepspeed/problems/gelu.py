"""deepspeed hunt: exact (erf) GELU, fp32"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.gelu(x)


def get_inputs():
    return [torch.randn(8, 16, 200)]


def get_init_inputs():
    return []
