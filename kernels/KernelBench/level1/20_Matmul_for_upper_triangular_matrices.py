import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication of two upper triangular matrices; the result is upper
    triangular too (KernelBench level 1 problem 14, at a CPU-sized N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.triu(torch.matmul(A, B))


N = 256


def get_inputs():
    A = torch.triu(torch.rand(N, N))
    B = torch.triu(torch.rand(N, N))
    return [A, B]


def get_init_inputs():
    return []
