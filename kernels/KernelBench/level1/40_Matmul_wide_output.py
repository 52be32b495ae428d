import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication with a short reduction and a wide output (C = A * B)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 32
K = 8
N = 1000


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return []
