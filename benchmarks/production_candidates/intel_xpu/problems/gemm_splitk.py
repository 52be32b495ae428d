"""intel-xpu-backend-for-triton hunt: C + A B with bf16 A (256 x 256) and B (256 x 256)
into an fp32 C, the products summed in fp32; the split-K GEMM adds its partial sums into C, so
C starts at zero here as in its benchmark"""

import torch
import torch.nn as nn

M, K, N = 256, 256, 256
KDIFF_ACCUMULATION = "float32"  # tl.dot accumulates in fp32 (acc_dtype), as do the atomic adds


class Model(nn.Module):
    def forward(self, a, b):
        # the class the launcher serves: its K loop reads whole blocks of BLOCK_K * SPLIT_K (128),
        # and tensor descriptors take row strides of whole 16 bytes (8 bf16 columns of B)
        assert a.shape[1] % 128 == 0 and b.shape[1] % 8 == 0
        return a.float() @ b.float()


def get_inputs():
    return [torch.randn(M, K).bfloat16(), torch.randn(K, N).bfloat16()]


def get_init_inputs():
    return []
