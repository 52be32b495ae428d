"""kernl hunt: RMSNorm (T5's: the mean square in fp32, x normalised, rounded to fp16, times
the weight), fp16, eps 1.6e-5 (kernl raises a smaller eps to it at fp16)"""

import torch
import torch.nn as nn

M, N = 32, 200


class Model(nn.Module):
    def forward(self, x, weight):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return weight * (x.float() * torch.rsqrt(variance + 1.6e-5)).to(weight.dtype)


def get_inputs():
    return [torch.randn(M, N).half(), torch.randn(N).half()]


def get_init_inputs():
    return []
