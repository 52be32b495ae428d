"""lmdeploy hunt: the W8A8 GEMM after per-token quantization: int8 activations (M x K) times
int8 weights (N x K, transposed), accumulated exactly in int32, times the per-token and
per-channel fp32 scales, stored in fp16; K = 96, less than one block of the kernel's 128"""

import torch
import torch.nn as nn

M, N, K = 24, 80, 96


class Model(nn.Module):
    def forward(self, a, b, a_scale, b_scale):
        acc = (a.double() @ b.double().T).float()  # int32 accumulation, exact at these sizes
        return (acc * a_scale * b_scale.T).half()


def get_inputs():
    return [
        torch.randint(-127, 128, (M, K), dtype=torch.int8),
        torch.randint(-127, 128, (N, K), dtype=torch.int8),
        torch.rand(M, 1) / 127,
        torch.rand(N, 1) / 127,
    ]


def get_init_inputs():
    return []
