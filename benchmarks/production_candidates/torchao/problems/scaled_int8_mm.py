"""torchao hunt: the int8 GEMM of its quantized training, (A @ B) * row_scale * col_scale with
int8 A (33 x 96) and B (96 x 40), int32 sums, fp32 scales and result"""

import torch
import torch.nn as nn

M, K, N = 33, 96, 40


class Model(nn.Module):
    def forward(self, A, B, row_scale, col_scale):
        acc = A.to(torch.int32) @ B.to(torch.int32)
        return acc.float() * row_scale[:, None] * col_scale[None, :]


def get_inputs():
    A = torch.randint(-128, 128, (M, K), dtype=torch.int8)
    B = torch.randint(-128, 128, (K, N), dtype=torch.int8)
    return [A, B, torch.rand(M) / 127, torch.rand(N) / 127]


def get_init_inputs():
    return []
