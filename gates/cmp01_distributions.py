"""CMP-01 input-distribution coverage: the benchmark's own inputs are one distribution among
many; the candidate must stay within the bound on all of them.

Beside the fixed seeds, each distribution is drawn once more at a seed chosen when the gate
runs: every fixed draw of every gate can be made beforehand by anyone who holds kdiff's code,
a candidate in its worker included, and answered from a table of fingerprints (the reference
for a draw it knows, anything for the caller's: tests/hostile/knows_the_judges_draws.py); a
draw at a seed nobody knew before cannot. The trial's label names the seed, so that a failure
can be drawn again."""
from __future__ import annotations

import secrets
from typing import Iterator

from kdiff.gates.base import ThresholdedGate, Trial, benchmark_draw
from kdiff.judging.context import GateContext
from kdiff.numerics import inputs as gen

# The range the seed chosen per verdict comes from: above every gate's fixed seeds (constants
# below a few thousand), and wide enough that no table of its draws can be made beforehand.
FRESH_SEEDS_FROM = 1 << 20
FRESH_SEEDS = 1 << 30


class DistributionCoverage(ThresholdedGate):
    id = "CMP-01"
    name = "input-distribution coverage"
    summary = ("normal, uniform(-1,1), uniform[0,1), x1e3, x1e-3, heavy tails, outliers, "
               "mostly zeros; several seeds, one of them chosen per verdict")
    signature = "distribution_dependent"

    def trials(self, ctx: GateContext) -> Iterator[Trial]:
        fresh = FRESH_SEEDS_FROM + secrets.randbelow(FRESH_SEEDS)
        for seed in [*range(ctx.options.seeds), fresh]:
            named = f"seed {seed}" + (" (chosen for this verdict)" if seed == fresh else "")
            yield Trial(f"benchmark get_inputs() {named}", benchmark_draw(ctx, seed))
            for strategy in gen.COVERAGE:
                yield Trial(f"{strategy.name} {named}", ctx.draw(strategy, seed))
