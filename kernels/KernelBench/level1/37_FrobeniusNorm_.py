import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple model that performs Frobenius norm normalization."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = torch.norm(x, p="fro")
        return x / norm


batch_size = 4
features = 8
dim1 = 16
dim2 = 16


def get_inputs():
    x = torch.randn(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return []
