"""EXC-02 subnormal handling: subnormal inputs, and normal inputs whose exact results are
subnormal. Where the same-precision reference keeps a subnormal (non-zero) result, the
candidate must not flush it to zero and must keep its sign; no non-finite value may appear
where the reference is finite. The sign of an exact zero is not judged.

What this catches: flush-to-zero / denormals-are-zero modes (CUDA --use_fast_math, the CPU's
FTZ/DAZ bits that torch.set_flush_denormal sets "for speed"), and kernels that rescale by a
flushed norm (0 -> Inf/NaN).

Beside the fixed seed, every trial is drawn once more at the seed chosen for the verdict
(`with_one_chosen`: CMP-01 draws no subnormal, so a candidate could keep a table of these).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from kdiff.data.model import GateClass, GateResult, Status
from kdiff.gates.base import Gate, Seed, TrialLog, with_one_chosen
from kdiff.judging.context import (
    NATIVE,
    Evaluation,
    GateContext,
    ReferenceFailure,
    check_structure,
)
from kdiff.numerics import inputs as gen
from kdiff.numerics import tolerance

DTYPE = NATIVE  # subnormal behaviour is judged at the problem's own precision
FIXED_SEED = 0

# Normal inputs scaled by 2^-e so that a product of `degree` of them lands in the subnormal
# range [2^-149, 2^-126) of fp32: e = 65, 70 for products of two (matmul, x*y), 44, 47 for
# three (x*y*z, a scaled product); e = 125 for ops that shrink values slightly (a mean, x/2).
RESULT_SCALE_EXPONENTS = (65, 70, 44, 47, 125)
MAX_RESULT_TRIALS = 2


def subnormal_input_scales(dtype: torch.dtype) -> tuple[float, float]:
    """Subnormal inputs: normal draws times the smallest normal / 8 (fp32: |x| around 2^-129,
    20 bits of precision left), or times 2^-12 of it (fp32: |x| around 2^-138) so that a sum
    of thousands of them still lands below the smallest normal; in a format with fewer
    subnormal binades (its stored mantissa bits: bf16 7, fp8 E4M3 3), two binades above its
    smallest subnormal at most, so that the draws are not all flushed by the cast itself."""
    finfo = torch.finfo(dtype)
    mantissa_bits = round(-math.log2(finfo.eps))  # eps = 2^-(stored mantissa bits)
    return finfo.tiny / 8, finfo.tiny * 2.0 ** -min(12, max(3, mantissa_bits - 2))


def is_subnormal(t: torch.Tensor) -> torch.Tensor:
    """Per element (of a complex tensor: per component, `tolerance.components`)."""
    t = tolerance.components(t.detach())
    if not t.is_floating_point():
        return torch.zeros(t.shape, dtype=torch.bool)
    a = tolerance.comparable(t.cpu()).abs()
    return (a > 0) & (a < torch.finfo(t.dtype).tiny)


def honest_margin(ev: Evaluation, i: int) -> torch.Tensor:
    """How far an honest same-precision evaluation in another order may stray from the
    oracle at output i. Each of the N roundings on the chain behind an element errs by at most
    u times its operands (the worst-case gamma_N term of the tolerance model, without the
    model's smallest-normal floor, which would swallow the whole subnormal range) or, in
    gradual underflow, by at most half the smallest subnormal (IEEE 754: the absolute spacing
    there is the smallest subnormal). For an output defined modulo a period (an angle), where
    its exact value is within the arithmetic bound of a whole turn an honest order may land
    on the other side of the turn, at a rounding of the period's size
    (Evaluation.turn_roundings): every subnormal there, 0 and the period are one angle. Where
    |oracle| exceeds this, every honest order keeps a non-zero result of the oracle's sign."""
    depth = ev.oracle.depths[i]
    relative = (tolerance.bound(ev.oracle.magnitudes[i], depth, ev.dtype,
                                tolerance.BoundModel.WORST_CASE, ev.quantizations()[i])
                - tolerance.SMALLEST_NORMAL[ev.dtype])
    # the spacing of gradual underflow in the format the result is stored in
    stored = ev.reference[i].dtype
    finfo = torch.finfo(stored.to_real() if stored.is_complex else
                        stored if stored.is_floating_point else ev.dtype)
    underflow = depth * finfo.tiny * finfo.eps / 2  # smallest subnormal = tiny * eps
    turn = ev.turn_roundings(tolerance.BoundModel.WORST_CASE)[i]
    return relative.cpu().clamp_min(0) + underflow + (0.0 if turn is None else turn.cpu())


def subnormal_draw(templates: list[gen.InputTemplate], chosen: list[int] | set[int],
                   step: int, name: str, seed: Seed) -> tuple[str, list[Any]]:
    """Subnormal draws at `seed` into the `chosen` inputs at each one's own format (the
    `step`-th of its subnormal_input_scales): one draw for all when they share a format, else
    one per input."""
    draw = f"{SubnormalHandling.id} {name} step {step}"
    scales = {i: subnormal_input_scales(templates[i].example.dtype)[step] for i in chosen}
    if len(set(scales.values())) == 1:
        scale = next(iter(scales.values()))
        only = None if set(chosen) == {i for i, t in enumerate(templates) if t.floating
                                       and t.free_count} else set(chosen)
        return (f"{name} {seed} (x {scale:.3g})",
                gen.realize(templates, gen.scaled(gen.normal(), scale), seed.of(draw),
                            only=only))
    inputs = gen.realize(templates, gen.normal(), seed.of(draw), only=set())
    for i, scale in scales.items():
        inputs[i] = gen.realize(templates, gen.scaled(gen.normal(), scale),
                                seed.of(f"{draw} input {i}"), only={i})[i]
    return f"{name} {seed} (x {', '.join(f'{v:.3g}' for v in scales.values())})", inputs


@dataclass
class SubnormalLog(TrialLog):
    """The trial log with the reference's subnormal results: how many it kept, and how many
    of those lie beyond the honest margin (the ones judged)."""

    kept: int = 0
    results_judged: int = 0


class SubnormalHandling(Gate):
    id = "EXC-02"
    name = "subnormal handling"
    klass = GateClass.TOLERANCE_FREE
    summary = "subnormal inputs and subnormal results: no flush to zero, sign kept, no Inf/NaN"

    def judge(self, ctx: GateContext) -> GateResult:
        floats = ctx.float_input_indices()
        if not floats:
            return self.result(Status.SKIP, ctx.no_free_inputs())
        log = SubnormalLog()
        for seed in with_one_chosen(ctx, [FIXED_SEED]):
            for label, inputs, ev in self.trials(ctx, floats, seed, log):
                failure = self.judge_trial(ctx, label, inputs, ev, log)
                if failure is not None:
                    return failure
        if log.results_judged == 0:
            tried = "; ".join(log.skipped) or "no trial ran"
            reason = (f"the {ctx.dtype_name(DTYPE)} reference keeps no subnormal result on "
                      f"any of the gate's inputs" if log.kept == 0 else
                      f"the reference's {log.kept} subnormal result(s) all lie within rounding "
                      f"noise of zero")
            return self.result(Status.SKIP, f"{reason} ({tried})")
        return self.result(Status.PASS, f"{log.results_judged} subnormal result(s) kept with "
                           f"their sign over {log.judged} trial(s) "
                           f"({', '.join(log.judged_labels)}); "
                           f"no non-finite value where the reference is finite")

    def trials(self, ctx: GateContext, floats: list[int], seed: Seed, log: SubnormalLog
               ) -> Iterator[tuple[str, list[Any], Evaluation]]:
        """Trials at `seed` on which the reference keeps subnormal results: subnormal inputs (all at
        once, then one input at a time beside the benchmark's values for the others, so that
        a subnormal times a normal stays subnormal), each at the first scale that keeps a
        subnormal result; then the best of the result scalings."""
        templates = ctx.templates()
        selections: list[tuple[str, set[int] | None]] = [("subnormal inputs", None)]
        if len(floats) > 1:
            selections += [(f"subnormal input {i}", {i}) for i in floats]
        for name, only in selections:
            for step in range(2):
                label, inputs = subnormal_draw(templates, floats if only is None else only,
                                               step, name, seed)
                if self.kept(ctx, label, inputs, log):
                    ev = self.evaluate(ctx, label, inputs, log)
                    if ev is not None:
                        yield label, inputs, ev
                    break
        scored = []
        for e in RESULT_SCALE_EXPONENTS:
            label = f"inputs x 2^-{e} {seed}"
            inputs = gen.realize(templates, gen.scaled(gen.normal(), 2.0 ** -e),
                                 seed.of(f"{self.id} inputs x 2^-{e}"))
            n = self.kept(ctx, label, inputs, log)
            if n:
                scored.append((n, label, inputs))
        for _, label, inputs in sorted(scored, key=lambda s: -s[0])[:MAX_RESULT_TRIALS]:
            ev = self.evaluate(ctx, label, inputs, log)
            if ev is not None:
                yield label, inputs, ev

    @staticmethod
    def kept(ctx: GateContext, label: str, inputs: list[Any], log: SubnormalLog) -> int:
        """How many subnormal results the working-precision reference keeps (a cheap look
        before the oracle is traced)."""
        try:
            n = sum(int(is_subnormal(r).sum()) for r in ctx.run_reference(inputs, dtype=DTYPE))
        except ReferenceFailure as exc:
            log.skipped.append(f"{label}: {exc}")
            return 0
        if not n:
            log.skipped.append(f"{label}: no subnormal result")
        return n

    @staticmethod
    def evaluate(ctx: GateContext, label: str, inputs: list[Any], log: SubnormalLog
                 ) -> Evaluation | None:
        try:
            ev = ctx.evaluate(inputs, dtype=DTYPE)
        except ReferenceFailure as exc:
            log.skipped.append(f"{label}: {exc}")
            return None
        return ev

    def judge_trial(self, ctx: GateContext, label: str, inputs: list[Any], ev: Evaluation,
                    log: SubnormalLog) -> GateResult | None:
        got = ctx.call(inputs, dtype=DTYPE)
        check_structure(got.outputs, ev.reference)
        log.judged_labels.append(label)
        for i, (ref, out) in enumerate(zip(ev.reference, got.outputs)):
            margin = honest_margin(ev, i)
            if ref.is_complex() and out.is_complex():  # component by component
                margin = tolerance.per_component(margin, ref.cpu())
                ref, out = tolerance.components(ref), tolerance.components(out)
            elif not (ref.is_floating_point() and out.is_floating_point()):
                continue
            kept = is_subnormal(ref)  # in its own format's range
            ref, out = (tolerance.comparable(t.detach().cpu()) for t in (ref, out))
            oracle = tolerance.components(ev.oracle.values[i]).cpu()
            spurious = torch.isfinite(ref) & ~torch.isfinite(out)
            if bool(spurious.any()):
                return self.fail(label, i, spurious, ref, out, "nonfinite_from_subnormal",
                                 f"non-finite where the {ctx.dtype_name(DTYPE)} reference is "
                                 f"finite")
            judged = (kept & (torch.sign(oracle) == torch.sign(ref.double()))
                      & (oracle.abs() > margin))
            log.kept += int(kept.sum())
            log.results_judged += int(judged.sum())
            flushed = judged & (out == 0)
            if bool(flushed.any()):
                return self.fail(label, i, flushed, ref, out, "subnormal_flushed",
                                 f"flushed to zero of {int(judged.sum())} judged subnormal "
                                 f"results")
            flipped = judged & (out != 0) & (torch.sign(out) != torch.sign(ref))
            if bool(flipped.any()):
                return self.fail(label, i, flipped, ref, out, "subnormal_sign",
                                 f"with the wrong sign of {int(judged.sum())} judged subnormal "
                                 f"results")
        return None

    def fail(self, label: str, output: int, mask: torch.Tensor, ref: torch.Tensor,
             out: torch.Tensor, signature: str, what: str) -> GateResult:
        flat = int(mask.reshape(-1).nonzero()[0])
        where = tuple(int(k) for k in torch.unravel_index(torch.tensor(flat), mask.shape)) \
            if mask.dim() else ()
        return self.result(
            Status.FAIL, f"{label}, output {output}: {int(mask.sum())} element(s) {what}; "
            f"first at index {where}: reference {float(ref.reshape(-1)[flat]):.6g}, got "
            f"{float(out.reshape(-1)[flat]):.6g}", signature)
