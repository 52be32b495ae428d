import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 8
dim = 256


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
