"""CMP-01 input-distribution coverage: the benchmark's own inputs are one distribution among
many; the candidate must stay within the bound on all of them."""
from __future__ import annotations

from typing import Iterator

from kdiff.gates.base import ThresholdedGate, Trial, benchmark_draw
from kdiff.judging.context import GateContext
from kdiff.numerics import inputs as gen


class DistributionCoverage(ThresholdedGate):
    id = "CMP-01"
    name = "input-distribution coverage"
    summary = ("normal, uniform(-1,1), uniform[0,1), x1e3, x1e-3, heavy tails, outliers, "
               "mostly zeros; several seeds")
    signature = "distribution_dependent"

    def trials(self, ctx: GateContext) -> Iterator[Trial]:
        for seed in range(ctx.options.seeds):
            yield Trial(f"benchmark get_inputs() seed {seed}", benchmark_draw(ctx, seed))
            for strategy in gen.COVERAGE:
                yield Trial(f"{strategy.name} seed {seed}", ctx.draw(strategy, seed))
