"""Right with autograd off, as benchmarks call it; wrong with it on (a training loop's
forward)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x * (3 if torch.is_grad_enabled() else 2)
