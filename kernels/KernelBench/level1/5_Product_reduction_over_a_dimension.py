import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple model that performs a product reduction over one dimension. On the benchmark's
    uniform[0, 1) inputs every output is tiny (a product of 32 such numbers is about 1e-14),
    below any atol a benchmark uses."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.prod(x, dim=self.dim)


batch_size = 8
dim1 = 32
dim2 = 16


def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [1]  # the reduced dimension (an argument, not a size)
