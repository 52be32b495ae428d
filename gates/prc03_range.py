"""PRC-03 range and cancellation: inputs near the working dtype's overflow and underflow range
(large logits for exp-based ops, values near the maximum) and cancellation-prone inputs.
Wherever the same-precision reference is finite and accurate (within half the bound), the
candidate must be finite and within the bound too; elsewhere nothing is judged. Beside the
fixed seed, each scale is drawn once more at the seed chosen for the verdict
(`with_one_chosen`: CMP-01 draws none of these scales, so a candidate could keep a table of
these)."""
from __future__ import annotations

import math
from typing import Iterator

import torch

from kdiff.data.model import GateResult, Status
from kdiff.gates.base import ThresholdedGate, Trial, TrialLog, with_one_chosen
from kdiff.judging.context import GateContext, ReferenceFailure, check_structure
from kdiff.numerics import inputs as gen
from kdiff.numerics.tolerance import (
    REFERENCE_MARGIN,
    compare,
    difference,
    in_double,
    unit_roundoff,
)


def range_strategies(dtype: torch.dtype) -> list[gen.Strategy]:
    """Scales that stress each stage of a computation's range: logits where exp() overflows
    fp32 (> 88.7) unless the maximum is subtracted; sqrt(max), where squares overflow; a
    hundredth of the maximum, where sums overflow; sqrt(tiny), where squares underflow; and
    a large common offset for cancellation."""
    fmax, tiny = torch.finfo(dtype).max, torch.finfo(dtype).tiny
    return [
        gen.scaled(gen.normal(), 100.0),
        gen.scaled(gen.normal(), 1e4),
        gen.scaled(gen.uniform(-1.0, 1.0), math.sqrt(fmax)),
        gen.scaled(gen.uniform(-1.0, 1.0), fmax / 100),
        gen.scaled(gen.uniform(-1.0, 1.0), math.sqrt(tiny)),
        gen.offset(gen.normal(), 1e6),
    ]


# Share of the elements the contract covers (finite reference, headroom) on which the
# reference may miss half the bound before a trial is under-specified. Under the probabilistic
# model (tolerance.LAMBDA = 8) an honest evaluation exceeds half the bound (lambda = 4) with
# probability at most 2 exp(-4^2 / 2) = 6.7e-4 per element; a reference missing it on 1%
# (15 times that) is not described by the error model at these inputs, and the few elements
# where it happened to land inside would judge the candidate on chance.
MISSED_SHARE = 0.01

FIXED_SEED = 500


class RangeAndCancellation(ThresholdedGate):
    id = "PRC-03"
    name = "range and cancellation"
    summary = "near overflow/underflow and cancellation: finite and accurate where the reference is"
    signature = "range_inaccurate"

    def trials(self, ctx: GateContext) -> Iterator[Trial]:
        seeds = with_one_chosen(ctx, [FIXED_SEED])
        for dtype in ctx.working_dtypes():
            if dtype is torch.bfloat16 and ctx.device == "cpu":
                continue
            # At the problem's own precision, the range of its finest format: coarser
            # inputs (fp8 beside fp32 scales) saturate at their own maximum when drawn.
            widest = dtype or min(ctx.native_dtypes(), key=unit_roundoff)
            for seed in seeds:
                for strategy in range_strategies(widest):
                    drawn = seed.of(f"{self.id} {strategy.name} {ctx.dtype_name(dtype)}")
                    yield Trial(f"{strategy.name} {seed}", ctx.draw(strategy, drawn), dtype)

    def judge_trial(self, ctx: GateContext, trial: Trial, log: TrialLog) -> GateResult | None:
        try:
            ev = ctx.evaluate(trial.inputs, trial.seed, trial.dtype)
        except ReferenceFailure as exc:
            log.skipped.append(f"{trial.label}: {exc}")
            return None
        bounds = ev.bounds(trial.bound_model)
        # what the reference must keep to: the bound with the room for another order
        kept = ev.bounds(trial.bound_model, REFERENCE_MARGIN)
        masks = []
        covered = missed = 0
        for i, (ref, bnd, scale, peak) in enumerate(zip(
                ev.reference, kept, ev.oracle.magnitudes, ev.oracle.peaks)):
            # a complex element is accurate where the modulus of its error is within its bound
            want = ev.expected(i, ref)  # a pick at a near tie: the one the reference holds
            ref64, want64 = in_double(ref.detach()).cpu(), in_double(want.detach()).cpu()
            fmax = torch.finfo(trial.dtype or (ref.dtype if ref.is_floating_point()
                                               else ev.dtype)).max
            accurate = torch.isfinite(ref64) & (
                difference(ref64, want64, ev.periods.get(i)) <= bnd.cpu())
            # Only where the traced magnitude (the sum of |terms|) fits the format can no
            # summation order overflow: there every partial sum is at most that magnitude.
            # Beyond it, whether an intermediate overflows depends on the order, which the
            # contract leaves free. And only where no intermediate behind the output left its
            # own format's range (the peak, a share of that range): sigmoid(conv) at inputs
            # near sqrt(max) has conv terms past the maximum, in any order, and a finite
            # output by saturation (an fp32 conv that gave +-inf there, a direct sum that gave
            # NaN: both overflowed). An fp32 intermediate of an fp16 output is judged against
            # fp32's range: a kernel that holds it in fp16 overflows where the reference did not.
            headroom = (scale.cpu() < fmax) & (peak < 1.0)
            masks.append(accurate & headroom)
            contract = torch.isfinite(ref64) & torch.isfinite(want64) & headroom
            covered += int(contract.sum())
            missed += int((contract & ~accurate).sum())
        if not any(bool(m.any()) for m in masks):
            log.under_specified.append(f"{trial.label}: the reference is nowhere accurate")
            return None
        if missed > MISSED_SHARE * covered:
            log.under_specified.append(
                f"{trial.label}: the reference itself misses half the bound on {missed} of "
                f"{covered} finite elements")
            return None
        got = ctx.call(trial.inputs, trial.seed, trial.dtype)
        check_structure(got.outputs, ev.reference)
        log.judged_labels.append(trial.label)
        allowances = ev.allowances(trial.bound_model)
        for i, (g, bnd, mask, given) in enumerate(zip(got.outputs, bounds, masks, allowances)):
            mm = compare(g, ev.expected(i, g), bnd, i, mask=mask, allowance=given,
                         period=ev.periods.get(i))
            if mm.worst_ratio > log.worst_ratio:
                log.worst_ratio, log.worst_label = mm.worst_ratio, trial.label
            if not mm.ok:
                signature = "overflow" if mm.nonfinite_got else self.signature
                return self.result(Status.FAIL, f"{trial.label} [{ctx.dtype_name(trial.dtype)}]: "
                                   f"{mm.describe()} (judged where the reference is finite and "
                                   f"accurate)", signature, mm.worst_ratio)
        return None
