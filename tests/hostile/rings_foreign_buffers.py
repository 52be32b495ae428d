"""Hands out two output buffers in turn, as alternates_buffers does, each call's output a
fresh storage (`torch.frombuffer`) on memory the candidate keeps in a bytearray: no earlier
output's storage object is alive for a weak reference to find, only the memory under it. A
caller that keeps `a = m(x1)` and calls `m(x2)`, `m(x3)` finds `a` overwritten."""

import gc

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ring, self.calls = [], 0

    def forward(self, x):
        nbytes = x.numel() * x.element_size()
        if not self.ring or len(self.ring[0]) != nbytes:
            self.ring = [bytearray(nbytes) for _ in range(2)]
        self.calls += 1
        gc.collect()  # whatever still holds an earlier output's storage object lets go
        buffer = self.ring[self.calls % 2]
        out = torch.frombuffer(buffer, dtype=x.dtype).view(x.shape)
        return torch.mul(x, 2, out=out)
