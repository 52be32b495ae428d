"""ORD-01 summation-order bound: inputs with a wide dynamic range and with cancellation, so
that the order of a reduction shows. Any order is allowed; the error must stay within the
probabilistic bound for fp32 accumulation, LAMBDA * u * sqrt(N) * sum|terms| (the oracle's
traced magnitude is sum|terms|, so cancellation does not shrink the bound to nothing)."""
from __future__ import annotations

from typing import Iterator

from kdiff.gates.base import ThresholdedGate, Trial
from kdiff.judging.context import GateContext
from kdiff.numerics import inputs as gen

# Dynamic range and cancellation: magnitudes over 8 decades with random signs; a common
# offset 10^4 times the spread (anything that subtracts a mean cancels ~13 of fp32's 24
# bits); and outliers among small values.
ORDER_SENSITIVE = (
    gen.log_uniform_magnitude(4.0),
    gen.offset(gen.normal(), 1e4),
    gen.with_outliers(gen.scaled(gen.normal(), 1e-2), fraction=0.02, factor=1e5),
)


class SummationOrder(ThresholdedGate):
    id = "ORD-01"
    name = "summation-order bound"
    summary = "wide dynamic range and cancellation; error within c*u*sqrt(N)*sum|terms|"
    signature = "order_error"

    def trials(self, ctx: GateContext) -> Iterator[Trial]:
        for seed in range(ctx.options.seeds):
            for strategy in ORDER_SENSITIVE:
                yield Trial(f"{strategy.name} seed {seed}", ctx.draw(strategy, 200 + seed))
