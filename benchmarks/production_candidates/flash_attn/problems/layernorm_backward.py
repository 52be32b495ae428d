"""flash-attention hunt: LayerNorm after a residual add, judged on its VJP by x, the residual,
the weight and the bias (KDIFF_BACKWARD)"""

import torch
import torch.nn as nn
import torch.nn.functional as F

M, N = 24, 200
KDIFF_BACKWARD = True


class Model(nn.Module):
    def forward(self, x, residual, weight, bias):
        return F.layer_norm(x + residual, (N,), weight, bias, eps=1e-6)


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, N), torch.rand(N) + 0.5, torch.randn(N)]


def get_init_inputs():
    return []
