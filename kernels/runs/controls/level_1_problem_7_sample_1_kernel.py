"""
kdiff-control: mean squared error as a sum of squares over the element count (PyTorch)
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        d = predictions - targets
        return torch.sum(d * d) / d.numel()
