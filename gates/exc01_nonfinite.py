"""EXC-01 non-finite propagation: NaN, +Inf and -Inf injected into the free positions of the
floating inputs must come out where the reference says they do, element for element.

Expected classes come from the float64 oracle and from the other evaluations an honest
working-precision run may give (OracleResult.alternatives: a running product's accumulator
that leaves the format's range, a read at each other admissible pick); an element is judged
where the reference run in the working precision has one of those classes, and passes where
the kernel's is one of them. Where the reference has none (overflow in the working precision,
a library algorithm that turns Inf into NaN) the position is not judged, and the count is
reported. A NaN of the reference that only paths of weight zero carry there, or that no
injected NaN reaches (Inf - Inf, 0 * Inf: a choice of its algorithm), is judged non-finite
only. An element an open pick decides (the oracle's infinite magnitude: another pick the
error model admits gives it another value, integers.TieSets) is judged by the classes of
every pick it admits where the oracle knows them all (a gather at a decision's index,
OracleResult.classes_known), and elsewhere by no class, as the value gates judge it by no
bound: which tied element an honest kernel picks, and so which injected value it reads or
where it writes one, is its own.
Tolerance-free: an element's class (finite, NaN, +Inf, -Inf) either matches or it does not.

Beside the fixed seeds, every injection is drawn once more at the seed chosen for the verdict
(`with_one_chosen`: no other gate draws a non-finite value, so a candidate could keep a table
of these and lose the special values anywhere else; tests/hostile/knows_the_judges_injections).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from kdiff.data.model import GateClass, GateResult, Status
from kdiff.gates.base import Gate, TrialLog, with_one_chosen
from kdiff.judging.context import GateContext, ReferenceFailure, check_structure
from kdiff.numerics import inputs as gen
from kdiff.numerics import tolerance
from kdiff.numerics.classes import CLASS_NAMES, FINITE, NAN, NEG_INF, POS_INF, classify

# Separate injections, so that a failure says which special value was lost; the mixed one
# puts all three side by side (NaN next to Inf in one reduction, +Inf meeting -Inf). Each: its
# label, its strategy, whether it injects NaN, and whether it holds infinities, which go only
# into inputs whose format has them (fp8 E4M3 has NaN only).
INJECTIONS = (
    ("NaN", gen.with_specials(gen.normal(), math.nan), True, False),
    ("+Inf", gen.with_specials(gen.normal(), math.inf), False, True),
    ("-Inf", gen.with_specials(gen.normal(), -math.inf), False, True),
    ("mixed", gen.with_specials(gen.with_specials(gen.with_specials(
        gen.normal(), math.nan, 0.01), math.inf, 0.01), -math.inf, 0.01), True, True),
)
SEEDS = (0, 1)

# Finite stand-ins for the injected values when asking which outputs an injected position
# influences: 1e4, far beyond the standard normal draws around them (|x| < 8 in 10^15 draws),
# so that a max or a clamp lets them through; of either sign and two sizes, so that an even
# function (x^2, |x|) or a sign test still sees a change; drawn per position, so that two
# injected positions cannot cancel (x_i - x_j); and once of the draws' own size, where a
# saturating function (tanh, a sigmoid, a softmax) still moves: at 1e4 only a path of weight
# zero and a saturated one leave an output unchanged alike. (magnitude, factor range) each.
PROBE_MAGNITUDE = 1e4
PROBE_FACTORS = ((PROBE_MAGNITUDE, 0.5, 1.0), (PROBE_MAGNITUDE, -1.0, -0.5),
                 (PROBE_MAGNITUDE, 0.5, 1.0), (1.0, 0.5, 1.0))
PROBE_SEED = 7


def _violation(expected: torch.Tensor, got: torch.Tensor) -> dict[str, torch.Tensor]:
    """The four ways a judged element can be wrong, each as a boolean mask."""
    exp_inf = (expected == POS_INF) | (expected == NEG_INF)
    got_inf = (got == POS_INF) | (got == NEG_INF)
    return {
        "nan_swallowed": (expected == NAN) & (got != NAN),
        "inf_swallowed": exp_inf & ~got_inf,
        "inf_sign_flip": exp_inf & got_inf & (got != expected),
        "spurious_nonfinite": (expected == FINITE) & (got != FINITE),
    }


def _index(flat: int, shape: torch.Size) -> tuple[int, ...]:
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), shape)) if len(shape) \
        else ()


def influenced(ctx: GateContext, inputs: list, nan_only: bool = False
               ) -> list[torch.Tensor] | None:
    """Per output, where the injected positions have any effect: the float64 reference run
    with finite stand-ins for the injected values (PROBE_FACTORS), compared across stand-ins.
    An output no stand-in changes reads the injected positions only through paths of weight
    zero (a dense diag(a) @ B reads B[k, j] times 0 in every row but k): the oracle's 0 * NaN
    there is an artefact of its algorithm, which another honest algorithm need not share.
    An output that is non-finite at finite stand-ins counts as influenced, and so does every
    output where the reference refuses the stand-ins. `nan_only`: where the injected NaNs
    have any effect, the stand-ins of the injected infinities held the same in every run."""
    g = torch.Generator().manual_seed(PROBE_SEED)
    runs = []
    for magnitude, lo, hi in PROBE_FACTORS:
        held = torch.Generator().manual_seed(PROBE_SEED + 1)
        probe = []
        for x in inputs:
            if isinstance(x, torch.Tensor) and tolerance.inexact(x):
                # a complex input's stand-ins go into its components, where they were injected
                x64 = tolerance.components(x.detach()).to(torch.float64)
                stand_ins = magnitude * (lo + (hi - lo) * torch.rand(
                    x64.shape, generator=g, dtype=torch.float64))
                if nan_only:
                    steady = PROBE_MAGNITUDE * (0.5 + 0.5 * torch.rand(
                        x64.shape, generator=held, dtype=torch.float64))
                    stand_ins = torch.where(torch.isnan(x64), stand_ins, steady)
                probed = torch.where(torch.isfinite(x64), x64, stand_ins.to(x64.device))
                x = torch.view_as_complex(probed.contiguous()) if x.is_complex() else probed
            probe.append(x)
        try:
            outs = ctx.run_reference(probe, dtype=torch.float64)
            if ctx.backward:  # the gradients too, along the gate's output gradients
                outs = ctx.run_reference(probe, dtype=torch.float64,
                                         cotangents=ctx.cotangents(outs))
        except ReferenceFailure:
            return None
        runs.append([tolerance.comparable(o.detach().cpu()) for o in outs])
    result = []
    for outs in zip(*runs):
        nonfinite = torch.zeros(outs[0].shape, dtype=torch.bool)
        changed = torch.zeros(outs[0].shape, dtype=torch.bool)
        for o in outs:
            if tolerance.inexact(o):
                nonfinite |= ~torch.isfinite(o)
            changed |= o != outs[0]
        result.append(changed | nonfinite)
    return result


@dataclass
class InjectionLog(TrialLog):
    """The trial log with the elements' classes: how many of each non-finite class were
    expected, and how many elements were not judged and why."""

    expected: dict[int, int] = field(default_factory=lambda: {NAN: 0, POS_INF: 0, NEG_INF: 0})
    unjudged: int = 0  # the float64 oracle and the working-precision reference disagree
    open_picks: int = 0  # decided by an open pick: another admissible pick changes them
    # decided by an open pick whose every admissible value is known: judged by their classes
    picks_judged: int = 0
    zero_weight: int = 0  # expected non-finite only through paths of weight zero
    # judged against another admissible class too (oracle.alternatives: a working-precision
    # accumulator may leave the format's range there)
    other_classes: int = 0
    inf_made_nan: int = 0  # NaN expected from injected Inf alone, where +-Inf came out
    formats_without_inf: bool = False

    def counts(self) -> str:
        return ", ".join(f"{n} {CLASS_NAMES[c]}" for c, n in self.expected.items())


class NonFinitePropagation(Gate):
    id = "EXC-01"
    name = "non-finite propagation"
    klass = GateClass.TOLERANCE_FREE
    summary = "NaN, +Inf, -Inf injected: output NaN/Inf masks equal the reference's exactly"

    def judge(self, ctx: GateContext) -> GateResult:
        if not ctx.float_input_indices():
            return self.result(Status.SKIP, ctx.no_free_inputs())
        log = InjectionLog()
        templates = ctx.templates()
        floats = set(ctx.float_input_indices())
        with_inf = {i for i in floats if gen.holds_infinity(templates[i].example.dtype)}
        for seed in with_one_chosen(ctx, SEEDS):
            for label, strategy, injects_nan, infinite in INJECTIONS:
                into = with_inf if infinite else floats
                if not into:
                    log.formats_without_inf = True
                    continue
                inputs = gen.realize(templates, strategy, seed.of(f"{self.id} {label}"),
                                     only=None if into == floats else into)
                failure = self.judge_trial(ctx, f"{label} {seed}", inputs, log, injects_nan)
                if failure is not None:
                    return failure
        # A scalar input (an fp8 GEMM's scale) takes the injected value at its one position
        # in every draw above, which makes every output non-finite and hides what the other
        # inputs' specials do: where there is one, each other input is injected alone too.
        if len(floats) > 1 and any(templates[i].example.numel() == 1 for i in floats):
            for i in sorted(i for i in floats if templates[i].example.numel() > 1):
                for label, strategy, injects_nan, infinite in INJECTIONS:
                    if infinite and i not in with_inf:
                        continue
                    inputs = gen.realize(templates, strategy, SEEDS[0], only={i})
                    failure = self.judge_trial(ctx, f"{label} into input {i} alone", inputs,
                                               log, injects_nan)
                    if failure is not None:
                        return failure
        if log.judged == 0:
            return self.result(Status.SKIP, f"the reference rejects every injection "
                               f"({log.skipped[0]})")
        detail = (f"{log.judged} injections: every judged element has the expected class "
                  f"(non-finite expected: {log.counts()})")
        if log.unjudged:
            detail += (f"; {log.unjudged} element(s) not judged (float64 oracle and working-"
                       f"precision reference disagree)")
        if log.open_picks:
            detail += (f"; {log.open_picks} element(s) not judged (an open pick decides them: "
                       f"another pick among near ties changes them)")
        if log.picks_judged:
            detail += (f"; {log.picks_judged} element(s) read at an open pick judged against "
                       f"the classes of every pick it admits")
        if log.other_classes:
            detail += (f"; {log.other_classes} element(s) admit another class too (a working-"
                       f"precision accumulator leaving the format's range, another pick)")
        if log.zero_weight:
            detail += (f"; {log.zero_weight} element(s) not judged (non-finite in the "
                       f"reference only through paths of weight zero: 0 * NaN)")
        if log.inf_made_nan:
            detail += (f"; {log.inf_made_nan} element(s) judged non-finite only (NaN from "
                       f"injected Inf alone, +-Inf returned)")
        if log.skipped:
            detail += f"; {len(log.skipped)} injection(s) rejected by the reference"
        if log.formats_without_inf:
            detail += "; no Inf injected: no floating input's format holds one (fp8 E4M3)"
        return self.result(Status.PASS, detail)

    def judge_trial(self, ctx: GateContext, label: str, inputs: list, log: InjectionLog,
                    injects_nan: bool = True) -> GateResult | None:
        try:
            ev = ctx.evaluate(inputs)
        except ReferenceFailure as exc:
            log.skipped.append(f"{label}: {exc}")
            return None
        got = ctx.call(inputs)
        check_structure(got.outputs, ev.reference)
        log.judged_labels.append(label)
        reach: list[torch.Tensor] | None = None  # computed only where a mismatch needs it
        nan_reach: list[torch.Tensor] | None = None  # the injected NaNs' reach, likewise
        for i, (oracle, magnitude, reference, out) in enumerate(zip(
                ev.oracle.values, ev.oracle.magnitudes, ev.reference, got.outputs)):
            oracle_cls, ref_cls, got_cls = classify(oracle), classify(reference), classify(out)
            # the classes of the other evaluations an honest working-precision run may give
            others = [classify(a) for a in
                      (ev.oracle.alternatives[i] if i < len(ev.oracle.alternatives) else [])]
            admitted = torch.zeros(got_cls.shape, dtype=torch.bool)  # the kernel's among them
            differs = torch.zeros(got_cls.shape, dtype=torch.bool)  # another class admitted
            judged = oracle_cls == ref_cls
            for other in others:
                admitted |= got_cls == other
                differs |= other != oracle_cls
                judged |= other == ref_cls
            log.unjudged += int((~judged).sum())
            picked = judged & torch.isinf(magnitude).cpu()
            if i < len(ev.oracle.classes_known) and ev.oracle.classes_known[i]:
                log.picks_judged += int(picked.sum())  # by the classes of every pick
            else:
                log.open_picks += int(picked.sum())
                judged &= ~picked
            log.other_classes += int((judged & differs).sum())
            missing = judged & (oracle_cls != FINITE) & (got_cls != oracle_cls) & ~admitted
            if bool(missing.any()):
                if reach is None:
                    reach = influenced(ctx, inputs) or []
                # The reach covers every output, a VJP's gradients included; what it does
                # not cover (the reference refused the stand-ins) counts as reached.
                reached = reach[i] if i < len(reach) else torch.ones(oracle_cls.shape,
                                                                     dtype=torch.bool)
                artefact = (oracle_cls != FINITE) & ~reached
                if bool((judged & artefact).any()):
                    # An algorithm that multiplies injected values by zero also turns an
                    # influenced +-Inf into NaN where another injection meets a zero weight
                    # (Inf * a + 0 * Inf): there only non-finiteness is judged.
                    artefact |= (oracle_cls == NAN) & (got_cls != FINITE)
                log.zero_weight += int((judged & artefact).sum())
                judged = judged & ~artefact
            # Where no injected NaN reaches an element, a NaN of the reference there comes
            # from Inf - Inf or from 0 * Inf, and which one is a choice of its algorithm (a
            # mask applied by multiplying, a zero-padded product) that the injection's reach
            # does not reveal where a non-zero path reaches the same output: there an Inf
            # that comes out as +-Inf is judged non-finite, as it is.
            loose = judged & (oracle_cls == NAN) & ((got_cls == POS_INF) | (got_cls == NEG_INF))
            if injects_nan and bool(loose.any()):
                if nan_reach is None:
                    nan_reach = influenced(ctx, inputs, nan_only=True) or []
                loose &= ~nan_reach[i] if i < len(nan_reach) else torch.zeros_like(loose)
            log.inf_made_nan += int(loose.sum())
            judged = judged & ~loose
            for c in log.expected:
                log.expected[c] += int((judged & (oracle_cls == c)).sum())
            wrong = {sig: mask & judged & ~admitted
                     for sig, mask in _violation(oracle_cls, got_cls).items()}
            counts = {sig: int(m.sum()) for sig, m in wrong.items()}
            first = next((sig for sig, n in counts.items() if n), None)
            if first is None:
                continue
            flat = int(wrong[first].reshape(-1).nonzero()[0])
            where = _index(flat, oracle_cls.shape)
            value = float(out.reshape(-1)[flat]) if out.is_floating_point() else \
                out.reshape(-1)[flat].item()
            n_judged = int(judged.sum())
            summary = ", ".join(f"{n} {sig}" for sig, n in counts.items() if n)
            return self.result(
                Status.FAIL,
                f"injection {label}, output {i}: at index {where} expected "
                f"{CLASS_NAMES[int(oracle_cls.reshape(-1)[flat])]}, got {value:.6g}; "
                f"{summary} of {n_judged} judged elements "
                f"({int((judged & (oracle_cls != FINITE)).sum())} expected non-finite, "
                f"{int((~judged).sum())} not judged)", first)
        return None
