"""based hunt: a linear layer fused with Primer's squared ReLU, relu(x W^T + b)^2, bf16 in and
out, the products and the bias summed in fp32 and squared there (256 x 96 times 256 x 96)"""

import torch
import torch.nn as nn

M, K, N = 256, 96, 256
KDIFF_DTYPES = ("bfloat16",)
KDIFF_ACCUMULATION = "float32"  # the kernel's tl.dot accumulates in fp32, the bias added there


class Model(nn.Module):
    def forward(self, x, weight, bias):
        # the class the launcher serves: its store of the result is unmasked, so rows and columns
        # are multiples of the largest block of its configurations (256)
        assert x.shape[0] % 256 == 0 and weight.shape[0] % 256 == 0
        pre = x.float() @ weight.float().T + bias.float()
        return torch.relu(pre).square().to(x.dtype)


def get_inputs():
    return [torch.randn(M, K).bfloat16(), (torch.randn(N, K) / K**0.5).bfloat16(), torch.randn(N).bfloat16()]


def get_init_inputs():
    return []
