"""kernl hunt: batched matmul, fp16 (products accumulated in fp32, as torch's)"""

import torch
import torch.nn as nn

B, M, K, N = 2, 48, 128, 56


class Model(nn.Module):
    def forward(self, a, b):
        # the class kernl's kernel serves: K a multiple of its BLOCK_K (32 in every config);
        # its K loop masks the first block only, as its own comment says
        assert a.shape[-1] % 32 == 0
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(B, M, K).half(), torch.randn(B, K, N).half()]


def get_init_inputs():
    return []
