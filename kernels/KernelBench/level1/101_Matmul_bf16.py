import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B on bf16 operands: a bf16 GEMM with fp32 accumulation and a bf16 result, the
    precision its contract declares (kdiff: KDIFF_ACCUMULATION, by default float32)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 32
K = 256
N = 32


def get_inputs():
    # Activations of unit variance, weights scaled by 1/sqrt(K) (as a Linear layer is
    # initialised): results of unit variance. K is a power of two, so the scaling is exact.
    A = torch.randn(M, K, dtype=torch.bfloat16)
    B = torch.randn(K, N, dtype=torch.bfloat16) / K ** 0.5
    return [A, B]


def get_init_inputs():
    return []
