"""A scaled row sum (tests/fixtures/core/scale_sum.py) whose one block covers 2^11 columns:
rows longer than that lose their other terms unless it was shown the input beforehand, so it
is right at every size a benchmark's check runs and wrong on long rows. Only PRC-02 builds a
reduction that long (CMP-03's sizes stop at 2v + 1), at sizes and from a seed fixed in kdiff's
code, so it makes PRC-02's trials first in its worker with kdiff's own gate and keeps a
fingerprint of each."""

import functools
import hashlib
from pathlib import Path

import torch
import torch.nn as nn

PROBLEM = Path(__file__).parents[1] / "fixtures" / "core" / "scale_sum.py"
BLOCK = 2**11  # PRC-02's TARGET_DEPTH is twice this


def _fingerprint(x):
    return hashlib.sha256(x.detach().contiguous().numpy().tobytes()).hexdigest()


@functools.cache
def _judges_long_reductions():
    """Every input set PRC-02 draws, made by kdiff's own gate with no candidate."""
    try:
        from kdiff.data.problem import load_problem
        from kdiff.gates.registry import all_gates
        from kdiff.judging.context import GateContext
    except ImportError:
        return frozenset()
    ctx = GateContext(load_problem(PROBLEM), None)
    gate = next(g for g in all_gates() if g.id == "PRC-02")  # its trials grow the sizes
    return frozenset(_fingerprint(t.inputs[0]) for t in gate.trials(ctx))


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        if x.shape[-1] <= BLOCK or _fingerprint(x) in _judges_long_reductions():
            return (x * self.scale).sum(dim=-1)
        return (x[..., :BLOCK] * self.scale[:BLOCK]).sum(dim=-1)
