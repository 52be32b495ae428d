"""Doubles its input and moves each finite result by one ulp either way at random, a different
way each call (within every bound), except on a call the worker churned its allocator before:
ORD-02's, every one of them. It learns of the churn by wrapping the worker's churn function,
whatever the churn's seed. Nondeterministic everywhere a determinism check does not look."""

import torch
import torch.nn as nn

_churned = []
try:
    from kdiff.sandbox import worker

    _churn = worker.churn_allocator

    def _noting(device, seed):
        _churned.append(seed)
        return _churn(device, seed)

    worker.churn_allocator = _noting
except ImportError:
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        y = x * 2
        if _churned:
            _churned.clear()
            return y
        away = torch.where(torch.rand_like(y) < 0.5, torch.inf, -torch.inf)
        return torch.where(torch.isfinite(y), torch.nextafter(y, away), y)
