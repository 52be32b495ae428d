"""Hands out a fresh output every call, and uses the one it handed out last as the next
call's scratch buffer: a caller that keeps `a = m(x1)` and calls `m(x2)` finds `a` holding
`m(x2)`'s intermediate. No output lies in an earlier one's storage: each call's is new."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None

    def forward(self, x):
        scratch = self.last if self.last is not None and self.last.shape == x.shape else None
        if scratch is None:
            scratch = torch.empty_like(x)
        torch.add(x, x, out=scratch)
        out = scratch.clone()
        self.last = out
        return out
