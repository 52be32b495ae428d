"""The problem `kdiff tune`'s split-K example is judged on: the sum of each row, 100 columns
(a multiple of no block size, and split evenly only in two)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=-1)


rows = 3
cols = 100


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
