"""CMP-01 input-distribution coverage: the benchmark's own inputs are one distribution among
many; the candidate must stay within the bound on all of them.

Beside the fixed seeds, each distribution is drawn once more at the seed chosen for the
verdict (`with_one_chosen`: a candidate can keep a table of the fixed draws).

First, the answers the candidate gave the native check (`GateContext.native_answers`), each
against the oracle's bound: that check's calls are the benchmark harness's, and what tells
them from a gate's cannot all be hidden (the harness's frames, the reference's output it
holds, its draws at seed 42); judged here, a kernel wrong only there is wrong here too."""
from __future__ import annotations

from typing import Iterator

from kdiff.gates.base import ThresholdedGate, Trial, benchmark_draw, with_one_chosen
from kdiff.judging.context import GateContext
from kdiff.numerics import inputs as gen


class DistributionCoverage(ThresholdedGate):
    id = "CMP-01"
    name = "input-distribution coverage"
    summary = ("normal, uniform(-1,1), uniform[0,1), x1e3, x1e-3, heavy tails, outliers, "
               "mostly zeros; several seeds, one of them chosen per verdict")
    signature = "distribution_dependent"

    def trials(self, ctx: GateContext) -> Iterator[Trial]:
        # A backward problem's trial is judged on its gradients too, which the native
        # check's forward calls do not return.
        for i, answer in enumerate([] if ctx.backward else ctx.native_answers):
            yield Trial(f"the native check's trial {i}", answer.inputs, answer.dtype,
                        answer.seed, answered=answer.outputs)
        for seed in with_one_chosen(ctx, range(ctx.options.seeds)):
            yield Trial(f"benchmark get_inputs() {seed}",
                        benchmark_draw(ctx, seed.of(f"{self.id} get_inputs()")))
            for strategy in gen.COVERAGE:
                yield Trial(f"{strategy.name} {seed}",
                            ctx.draw(strategy, seed.of(f"{self.id} {strategy.name}")))
