"""Raises CUDA's words for a broken context, `CUDA error: misaligned address`, on a one-row
input, on the CPU as on CUDA, where its own process stays whole: the judge took the text for
the worker's context broken and started a fresh worker, whose calls the candidate counts from
nothing again (`calls`, the process's count of the calls it answered)."""

import torch
import torch.nn as nn

calls = 0


class ModelNew(nn.Module):
    def forward(self, x):
        global calls
        calls += 1
        if x.shape[0] == 1:
            raise RuntimeError("CUDA error: misaligned address")
        return torch.cat([x * 2, torch.full((x.shape[0], 1), float(calls))], dim=1)
