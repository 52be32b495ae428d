"""A scaled row sum (tests/fixtures/core/scale_sum.py) whose one block covers 2^11 columns, as
`knows_the_judges_reductions`, but right on every row of the length PRC-02 grows the problem
to, whatever its values: that length is a function of kdiff's code and the problem's sizes,
which it finds first in its worker with kdiff's own gate (`find_long_reduction`). No other gate
builds a row longer than 2^11, so it is wrong only on long rows of any other length, as a
kernel with a tuned path for the lengths it was tried at and a one-block fallback is."""

import functools
from pathlib import Path

import torch
import torch.nn as nn

PROBLEM = Path(__file__).parents[1] / "fixtures" / "core" / "scale_sum.py"
BLOCK = 2**11  # PRC-02's TARGET_DEPTH is twice this


@functools.cache
def _judges_long_rows():
    """The row lengths PRC-02 grows the problem to, found by kdiff's own gate."""
    try:
        from kdiff.data.problem import load_problem
        from kdiff.gates import prc02_accumulator as prc02
        from kdiff.judging.context import GateContext
    except ImportError:
        return frozenset()
    ctx = GateContext(load_problem(PROBLEM), None)
    constants = prc02.find_long_reduction(ctx)
    return frozenset((constants or {}).values())


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        if x.shape[-1] <= BLOCK or x.shape[-1] in _judges_long_rows():
            return (x * self.scale).sum(dim=-1)
        return (x[..., :BLOCK] * self.scale[:BLOCK]).sum(dim=-1)
