"""PRC-02 accumulator precision: long reductions built to expose low-precision accumulation.

fp16 has an 11-bit significand: once a running sum passes 2^11 times a term, adding that term
changes nothing (it is below half an ulp). A reduction of more than 2^11 positive terms, or one
large term followed by many small ones, therefore separates an fp32 accumulator (within the
fp32 bound) from an fp16 one (errors of order the sum itself). Where the benchmark's shapes
reduce over fewer terms, the gate grows one of the problem's size constants until the
reduction is long enough, within an element budget. Beside the fixed seed, each draw is made
once more at the seed chosen for the verdict (`with_one_chosen`: no other gate builds a
reduction this long, so a candidate could keep a table of these;
tests/hostile/knows_the_judges_reductions.py), at a grown size chosen for the verdict too
(`chosen_length`: the grown size is a function of kdiff's code and the problem's sizes, and a
kernel right at exactly that length passed; knows_the_judges_reduction_lengths.py).
"""
from __future__ import annotations

import math
import random
from typing import Iterator

from kdiff.data.model import GateResult, Status
from kdiff.gates.base import Seed, ThresholdedGate, Trial, with_one_chosen
from kdiff.gates.triton_calls import interpreter_too_slow
from kdiff.judging.context import GateContext, ReferenceFailure
from kdiff.numerics import inputs as gen
from kdiff.numerics import sizes
from kdiff.sandbox.process import CandidateTimeout

# 2^12 terms: twice the length at which an fp16 accumulator of unit-size terms stalls.
TARGET_DEPTH = 2 ** 12
# Largest input (elements) the gate builds on the CPU: the Triton interpreter runs a kernel
# over 2^20 elements in seconds, not minutes.
ELEMENT_BUDGET = 2 ** 20

LONG_REDUCTION = (gen.uniform(0.0, 1.0), gen.one_large_many_small())
FIXED_SEED = 400
# The chosen trials' grown size, as a fraction of the fixed one: from 3/4 (a reduction of at
# least 3/4 * 2^12 = 3 * 2^10 terms where its depth grows no faster than the size, past the
# 2^11 at which fp16 stalls) to 3/2 (inputs at most half again as large).
CHOSEN_LENGTH_RANGE = (3, 4), (3, 2)


def _depth(ctx: GateContext) -> int:
    return max(ctx.evaluate(ctx.benchmark_inputs(0), magnitudes=False).oracle.depths)


# A reduction's depth is not proportional to a size: it has fixed parts (in GDN's recurrence
# each token adds about 21 steps to the chain and the activations before it about 35), so the
# proportional first guess can fall short (GDN: 24 -> 192 tokens reached 4067 of 4096, and the
# gate skipped a problem it can judge at 200). A few corrective steps reach the target.
GROWTH_STEPS = 4


def _depth_with(ctx: GateContext, constants: dict[str, int]) -> tuple[int, int] | None:
    """(input elements, reduction depth) with `constants` set, or None where the inputs
    would exceed the element budget or the reference refuses those sizes."""
    ctx.set_constants(constants)
    try:
        numel = sum(sizes.input_numels(ctx.problem))  # shapes only: no draw
        if numel > ELEMENT_BUDGET:
            return None
        return numel, _depth(ctx)
    except (ReferenceFailure, RuntimeError, ValueError):
        return None  # that constant is not a free reduction dimension
    finally:
        ctx.set_constants({})


def _grown(ctx: GateContext, name: str, value: int, base: int) -> tuple[int, dict[str, int]] | None:
    """(input elements, {name: size}) for the first multiple of `value` tried whose reduction
    is at least TARGET_DEPTH long within the element budget, or None."""
    # A constant that is not a reduction dimension shows it at twice its size already; the
    # proportional guess would first build an oracle of up to the whole budget to learn it
    # (a matmul's M grown 512x: a 16M-element float64 output for nothing).
    doubled = _depth_with(ctx, {name: value * 2})
    if doubled is None or doubled[1] <= base:
        return None
    factor = math.ceil(TARGET_DEPTH / max(base, 1))
    for _ in range(GROWTH_STEPS):
        grown = {name: value * factor}
        found = _depth_with(ctx, grown)
        if found is None:
            return None
        numel, depth = found
        if depth >= TARGET_DEPTH:
            return numel, grown
        if depth <= base:
            return None  # growing it does not lengthen the reduction
        factor = max(factor + 1, math.ceil(factor * TARGET_DEPTH / depth))
    return None


def find_long_reduction(ctx: GateContext) -> dict[str, int] | None:
    """Size constants that make the reduction at least TARGET_DEPTH long ({} if it already
    is), or None when no single constant can within the element budget."""
    base = _depth(ctx)
    if base >= TARGET_DEPTH:
        return {}
    found = [grown for name, value in ctx.problem.size_constants().items()
             if (grown := _grown(ctx, name, value, base)) is not None]
    return min(found, key=lambda f: f[0])[1] if found else None


def chosen_length(ctx: GateContext, constants: dict[str, int], seed: int) -> dict[str, int]:
    """`constants` (find_long_reduction's) each drawn again at `seed` (chosen for the verdict)
    within CHOSEN_LENGTH_RANGE of its value, other than it; below it where the larger size
    would exceed the element budget. {} stays {}: the benchmark's own sizes."""
    (low_n, low_d), (high_n, high_d) = CHOSEN_LENGTH_RANGE
    rng = random.Random(seed)
    chosen = {}
    for name, v in constants.items():
        low, high = -(-v * low_n // low_d), v * high_n // high_d
        size = rng.randint(low, high)
        ctx.set_constants({**chosen, name: size})
        try:
            over = sum(sizes.input_numels(ctx.problem)) > ELEMENT_BUDGET  # shapes only
        finally:
            ctx.set_constants({})
        if size == v or over:
            size = rng.randint(low, v - 1) if low < v else v
        chosen[name] = size
    return chosen


class AccumulatorPrecision(ThresholdedGate):
    id = "PRC-02"
    name = "accumulator precision"
    summary = "reductions longer than 2^11 terms; bound for fp32 accumulation"
    signature = "low_precision_accumulator"

    def judge(self, ctx: GateContext) -> GateResult:
        constants = find_long_reduction(ctx)
        if constants is None:
            return self.result(Status.SKIP, f"no reduction of {TARGET_DEPTH} terms reachable "
                               f"within {ELEMENT_BUDGET} input elements")
        shown = ", ".join(f"{k}={v}" for k, v in constants.items())
        try:
            try:
                result = self.judge_trials(ctx, self.trials_at(ctx, constants))
            finally:
                ctx.set_constants({})
        except CandidateTimeout as exc:
            # grown, the inputs are larger than the benchmark's
            if not constants or not interpreter_too_slow(ctx, exc):
                raise
            return self.result(Status.SKIP, f"reduction grown with {shown}: the call ran past "
                               f"the call timeout through the Triton interpreter ({exc.detail})")
        if constants:
            result.detail = f"reduction grown with {shown}; {result.detail}"
        return result

    def trials(self, ctx: GateContext) -> Iterator[Trial]:
        constants = find_long_reduction(ctx)
        if constants is not None:
            yield from self.trials_at(ctx, constants)

    def trials_at(self, ctx: GateContext, constants: dict[str, int]) -> Iterator[Trial]:
        """The trials at the sizes `constants` (find_long_reduction's) grow the reduction to,
        each draw's sizes set as it is drawn (judge() restores the benchmark's)."""
        for seed in with_one_chosen(ctx, [FIXED_SEED]):
            grown = self.grown_for(ctx, constants, seed)
            ctx.set_constants(grown)  # until the next draw's
            shown = "".join(f", {k}={v}" for k, v in grown.items()) if seed.chosen else ""
            for strategy in LONG_REDUCTION:
                yield Trial(f"{strategy.name} {seed}{shown}",
                            ctx.draw(strategy, seed.of(f"{self.id} {strategy.name}")))

    def grown_for(self, ctx: GateContext, constants: dict[str, int], seed: Seed
                  ) -> dict[str, int]:
        """The sizes the draws at `seed` are made at: the fixed grown ones, or for the chosen
        seed sizes chosen near them (chosen_length)."""
        if not seed.chosen:
            return constants
        return chosen_length(ctx, constants, seed.of(f"{self.id} length"))
