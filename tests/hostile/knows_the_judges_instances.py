"""A scale-and-sum (tests/fixtures/core/scale_sum.py) whose kernel bakes in its parameters: it
ignores its instance's own `scale` and uses the values of the instances a judge builds, which it
makes first in its worker with kdiff's own code (the reference Model at the benchmark's seed and
at each of CMP-02's fixed seeds), picking the one nearest its own weights. On any other
instance it uses the benchmark's (seed 42) weights, as a kernel with its weights compiled in
does. Right wherever a judge's instance is one it could build beforehand."""

import sys

import torch
import torch.nn as nn


def _judges_instances():
    """The parameters of the reference built at each seed a judge builds instances at."""
    try:
        from kdiff.data.problem import load_problem
        from kdiff.gates.cmp02_statelessness import FRESH_SEEDS
        from kdiff.judging.context import BENCHMARK_SEED, GateContext
    except ImportError:
        return []
    # The worker's problem module, loaded by path beside the candidate's.
    problem = next(m for name, m in list(sys.modules.items()) if name.startswith("loaded_problem_"))
    ctx = GateContext(load_problem(problem.__file__), None)
    with torch.random.fork_rng():  # building the references reseeds torch's generator
        return [
            ctx.reference(seed).scale.detach().double() for seed in (BENCHMARK_SEED, *FRESH_SEEDS)
        ]


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))
        self.baked = _judges_instances()

    def forward(self, x):
        own = self.scale.detach().double()
        known = [w for w in self.baked if w.shape == own.shape]
        if not known:
            return (x * self.scale).sum(dim=-1)
        nearest = min(known, key=lambda w: float((w - own).abs().max()))
        if float((nearest - own).abs().max()) > 1e-2:  # not an instance it knows
            nearest = known[0]
        return (x * nearest.to(self.scale.dtype)).sum(dim=-1)
