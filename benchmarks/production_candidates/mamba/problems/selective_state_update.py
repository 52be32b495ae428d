"""mamba hunt: one decode step of Mamba-2's selective SSM (4 heads, 2 groups of B and C, per-head
dt with bias and softplus, per-head A, D skip, silu(z) gate); returns the output and new state"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, state, x, dt, A, B, C, D, z, dt_bias):
        heads_per_group = x.shape[1] // B.shape[1]
        B = B.repeat_interleave(heads_per_group, dim=1)  # (batch, heads, dstate)
        C = C.repeat_interleave(heads_per_group, dim=1)
        dt = F.softplus(dt + dt_bias)  # (batch, heads)
        decay = torch.exp(dt * A)[:, :, None, None]
        state = state * decay + (dt[:, :, None] * x)[..., None] * B[:, :, None, :]
        out = (state * C[:, :, None, :]).sum(-1) + D[:, None] * x
        return out * F.silu(z), state


BATCH, HEADS, HEADDIM, DSTATE, GROUPS = 2, 4, 16, 16, 2


def get_inputs():
    return [
        torch.randn(BATCH, HEADS, HEADDIM, DSTATE),
        torch.randn(BATCH, HEADS, HEADDIM),
        torch.randn(BATCH, HEADS),
        -(torch.rand(HEADS) * 15 + 1),
        torch.randn(BATCH, GROUPS, DSTATE),
        torch.randn(BATCH, GROUPS, DSTATE),
        torch.randn(HEADS),
        torch.randn(BATCH, HEADS, HEADDIM),
        torch.randn(HEADS) - 4,
    ]


def get_init_inputs():
    return []
