"""
kdiff-control: PyTorch Softsign (x / (1 + |x|) in the wrapper)
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / (1 + x.abs())
