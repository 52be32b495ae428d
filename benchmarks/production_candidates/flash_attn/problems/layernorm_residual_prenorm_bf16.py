"""flash-attention hunt: the residual added, then LayerNorm; the sum returned in fp32 beside the
normalised output (prenorm, residual_in_fp32, as a pre-norm transformer block keeps it)"""

import torch
import torch.nn as nn
import torch.nn.functional as F

M, N = 24, 200


class Model(nn.Module):
    def forward(self, x, residual, weight, bias):
        s = x + residual
        return F.layer_norm(s, (N,), weight, bias, eps=1e-6), s


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, N), torch.rand(N) + 0.5, torch.randn(N)]


def get_init_inputs():
    return []


# The problem at bfloat16 (twenty-second session, second pass): the fp32 problem's floating inputs
# cast, so that the reference runs in torch at bfloat16, as production runs the kernel
_fp32_inputs = get_inputs


def get_inputs():
    return [t.to(torch.bfloat16) if t.is_floating_point() else t for t in _fp32_inputs()]
