"""
kdiff-control: layer norm from torch.var_mean (PyTorch, two-pass statistics)
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dims = tuple(range(-len(self.ln.normalized_shape), 0))
        var, mean = torch.var_mean(x, dim=dims, keepdim=True, correction=0)
        return (x - mean) * torch.rsqrt(var + self.ln.eps) * self.ln.weight + self.ln.bias
