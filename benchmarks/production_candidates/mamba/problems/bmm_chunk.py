"""mamba hunt: SSD's C B^T within each chunk of 16 steps, 2 groups (batch, chunks, groups, l, s)"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        batch, seqlen, groups, k = a.shape
        a = a.reshape(batch, seqlen // 16, 16, groups, k)
        b = b.reshape(batch, seqlen // 16, 16, groups, k)
        return torch.einsum("bclgk,bcsgk->bcgls", a, b)


def get_inputs():
    return [torch.randn(2, 48, 2, 24), torch.randn(2, 48, 2, 24)]


def get_init_inputs():
    return []
