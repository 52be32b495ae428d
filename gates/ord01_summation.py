"""ORD-01 summation-order bound: inputs with a wide dynamic range and with cancellation, so
that the order of a reduction shows. Any order is allowed; the error must stay within the
probabilistic bound for fp32 accumulation, LAMBDA * u * sqrt(N) * sum|terms| (the oracle's
traced magnitude is sum|terms|, so cancellation does not shrink the bound to nothing).
Beside the fixed seeds, each draw is made once more at the seed chosen for the verdict
(`with_one_chosen`: CMP-01 draws no such range, so a candidate could keep a table of these)."""
from __future__ import annotations

from typing import Any, Iterator

import torch

from kdiff.gates.base import ThresholdedGate, Trial, with_one_chosen
from kdiff.judging.context import GateContext, ReferenceFailure
from kdiff.numerics import inputs as gen
from kdiff.numerics.tolerance import comparable, inexact

# Dynamic range and cancellation: magnitudes over 8 decades with random signs; a common
# offset 10^4 times the spread (anything that subtracts a mean cancels ~13 of fp32's 24
# bits); and outliers among small values.
ORDER_SENSITIVE = (
    gen.log_uniform_magnitude(4.0),
    gen.offset(gen.normal(), 1e4),
    gen.with_outliers(gen.scaled(gen.normal(), 1e-2), fraction=0.02, factor=1e5),
)

# These magnitudes are about order, not range: where the working-precision reference
# overflows on a draw the oracle keeps finite (an fp16 GEMM: products of 1e4-sized values pass
# fp16's 65504), the draw is scaled down by RANGE_STEP until it does not, which keeps its
# dynamic range and its cancellation; a product of two scaled inputs shrinks by the square.
RANGE_STEP = 2.0 ** -8
RANGE_STEPS = 4  # 2^-32 at most: an fp16 output of 65504 from fp32-range draws

FIXED_SEEDS_FROM = 200  # the gate's fixed seeds: 200, 201, ... (ctx.options.seeds of them)


def _overflows(ctx: GateContext, inputs: list[Any]) -> bool:
    try:
        ev = ctx.evaluate(inputs)
    except ReferenceFailure:
        return False  # the trial says so itself
    return any(bool((~torch.isfinite(comparable(r.detach().cpu())) & torch.isfinite(o.cpu())).any())
               for r, o in zip(ev.reference, ev.oracle.values)
               if inexact(r) and inexact(o))


def in_range(ctx: GateContext, inputs: list[Any]) -> tuple[list[Any], int]:
    """The draw, scaled by RANGE_STEP as often as the reference needs to stay finite (at most
    RANGE_STEPS times), and how often it was."""
    steps, floating = 0, set(ctx.float_input_indices())
    while steps < RANGE_STEPS and _overflows(ctx, inputs):
        steps += 1
        inputs = [x * RANGE_STEP if i in floating else x for i, x in enumerate(inputs)]
    return inputs, steps


class SummationOrder(ThresholdedGate):
    id = "ORD-01"
    name = "summation-order bound"
    summary = "wide dynamic range and cancellation; error within c*u*sqrt(N)*sum|terms|"
    signature = "order_error"

    def trials(self, ctx: GateContext) -> Iterator[Trial]:
        fixed = range(FIXED_SEEDS_FROM, FIXED_SEEDS_FROM + ctx.options.seeds)
        for seed in with_one_chosen(ctx, fixed):
            for strategy in ORDER_SENSITIVE:
                inputs, steps = in_range(ctx, ctx.draw(
                    strategy, seed.of(f"{self.id} {strategy.name}")))
                scaled = f" x 2^-{8 * steps} (the reference's range)" if steps else ""
                yield Trial(f"{strategy.name} {seed}{scaled}", inputs)
