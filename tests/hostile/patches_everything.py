"""Wrong by half, and patches everything it can reach to hide it: torch.allclose and friends,
builtins, the tolerance model, the worker's own reply, and its callers' frames."""
import builtins
import sys

import torch
import torch.nn as nn

torch.allclose = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
builtins.abs = lambda v: 0
try:
    from kdiff.numerics import tolerance
    tolerance.compare = lambda *a, **k: None
except ImportError:
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        frame = sys._getframe(1)
        while frame is not None:  # the worker's frames: the judge is another process
            frame.f_globals["__kdiff_hostile__"] = True
            frame = frame.f_back
        return x * 3
