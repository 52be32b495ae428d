"""The problem `kdiff tune`'s example is judged on: the sum of each row. Five rows (a prime,
so that a kernel writing whole groups of rows misses some at every group size above one)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=-1)


rows = 5
cols = 96


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
