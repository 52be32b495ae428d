"""triton-lang/kernels hunt: an fp16 GEMM (fp32 accumulation, fp16 out), 96 x 80 x 200 (K not a
multiple of the block)"""

import torch
import torch.nn as nn

M, N, K = 96, 80, 200
KDIFF_DTYPES = ("float16",)


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(M, K).half(), torch.randn(K, N).half()]


def get_init_inputs():
    return []
