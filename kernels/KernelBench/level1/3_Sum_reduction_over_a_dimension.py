import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple model that performs a sum reduction over one dimension. The reduced dimension
    is long (4096 terms, beyond fp16's 2^11 significand) so that the accumulator's precision
    shows."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 4
dim1 = 4096


def get_inputs():
    x = torch.rand(batch_size, dim1)
    return [x]


def get_init_inputs():
    return [1]  # the reduced dimension (an argument, not a size)
