"""kernl hunt: LayerNorm with weight and bias, fp16 (as kernl runs it), eps 1.6e-5 (kernl raises
a smaller eps to it at fp16)"""

import torch
import torch.nn as nn
import torch.nn.functional as F

M, N = 32, 200


class Model(nn.Module):
    def forward(self, x, weight, bias):
        return F.layer_norm(x, (x.shape[-1],), weight, bias, 1.6e-5)


def get_inputs():
    return [torch.randn(M, N).half(), torch.randn(N).half(), torch.randn(N).half()]


def get_init_inputs():
    return []
