"""Doubles its input and moves each finite result by one ulp either way at random, a different
way each call (within every bound), as `exact_only_after_churn` does, except on a call whose
request names the allocator churn at all: ORD-02's, its first run included, which was sent
with `churn=False`. It reads each request by wrapping its worker's `cmd_call`.
Nondeterministic everywhere a determinism check does not look."""

import torch
import torch.nn as nn

_TOLD = []
try:
    from kdiff.sandbox import worker

    _call = worker.Worker.cmd_call

    def _cmd_call(self, msg):
        _TOLD[:] = ["churn" in msg]
        return _call(self, msg)

    worker.Worker.cmd_call = _cmd_call
except ImportError:
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        y = x * 2
        if _TOLD and _TOLD[0]:
            return y
        away = torch.where(torch.rand_like(y) < 0.5, torch.inf, -torch.inf)
        return torch.where(torch.isfinite(y), torch.nextafter(y, away), y)
