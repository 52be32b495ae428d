"""The one small interface every gate shares: `Gate`, and the trial loop of the thresholded
gates."""

from __future__ import annotations

import contextlib
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Iterator

import torch

from kdiff.data.model import GateClass, GateResult, Status
from kdiff.judging.context import (
    BENCHMARK_SEED,
    NATIVE,
    STORAGE_SIGNATURES,
    CallResult,
    Evaluation,
    GateContext,
    JudgeDeviceBroken,
    ReferenceFailure,
    check_structure,
    chosen_draw_seed,
    sticky_device_error,
)
from kdiff.numerics import inputs as gen
from kdiff.numerics import tolerance
from kdiff.sandbox.process import CandidateFailure

# Trial sharing: the gates that judge values at the benchmark's sizes draw their benchmark-
# distribution and standard-normal input sets from these (CMP-01, PRC-01, CMP-02's first
# calls, CMP-03's benchmark shape, RES-01's oracle), so that one candidate call and one oracle
# evaluation serve each of them. Draw k of the benchmark's get_inputs() is seeded
# SHARED_BENCHMARK_SEED + k (any seed the other gates do not use); draw k of the normal is
# seeded k, as CMP-01 draws every distribution it covers.
SHARED_BENCHMARK_SEED = 1000


def benchmark_draw(ctx: GateContext, k: int) -> list[Any]:
    return ctx.benchmark_inputs(SHARED_BENCHMARK_SEED + k)


def normal_draw(ctx: GateContext, k: int) -> list[Any]:
    return ctx.draw(gen.normal(), k)


@dataclass(frozen=True)
class Seed:
    """A seed a gate draws at, named in its trials' labels so that a failure can be drawn
    again: one fixed in kdiff's code, or the verdict's chosen seed (what --chosen-seed takes),
    from which each draw takes a seed of its own (`of`)."""

    value: int
    chosen: bool = False  # for this verdict, not fixed in kdiff's code

    def __str__(self) -> str:
        return f"seed {self.value}" + (" (chosen for this verdict)" if self.chosen else "")

    def of(self, draw: str) -> int:
        """The seed of the draw named `draw` (the gate's id and what it draws, unique in a
        verdict): a fixed seed is every draw's; the chosen one gives each its own
        (chosen_draw_seed), so that one chosen draw tells a candidate nothing of the next."""
        return chosen_draw_seed(self.value, draw) if self.chosen else self.value


def chosen_for_verdict(ctx: GateContext) -> Seed:
    """The seed chosen for this verdict (GateContext.chosen_seed: a candidate can keep a table
    of every fixed draw)."""
    return Seed(ctx.chosen_seed, chosen=True)


def with_one_chosen(ctx: GateContext, fixed: Iterable[int]) -> list[Seed]:
    """The gate's fixed seeds, then the one chosen for this verdict."""
    return [*(Seed(s) for s in fixed), chosen_for_verdict(ctx)]


class Gate:
    id: ClassVar[str]
    name: ClassVar[str]
    klass: ClassVar[GateClass]
    summary: ClassVar[str] = ""
    # The gate's failures rest on the reference's values (not on resources or storage).
    judges_values: ClassVar[bool] = True
    # Trial sharing: the gate's plain calls (inputs, seed, dtype, instance) may be answered by
    # the same call another gate made. A gate whose calls must each reach the candidate
    # (repeats, a sequence on one instance, memory measured per call) says False.
    shares_calls: ClassVar[bool] = True

    def judge(self, ctx: GateContext) -> GateResult:
        raise NotImplementedError

    def run(self, ctx: GateContext) -> GateResult:
        """`judge` with the mapping every gate shares: what the candidate does wrong is a
        failure with its signature; what breaks in kdiff is an error."""
        start, calls = time.perf_counter(), ctx.calls_made
        if ctx.too_large:
            return self.result(Status.ERROR, ctx.too_large)
        ctx.call_fault = None
        try:
            with ctx.shared_calls(self.shares_calls):
                result = self.judge(ctx)
            if (
                result.status is Status.FAIL
                and self.judges_values
                and result.signature not in STORAGE_SIGNATURES
            ):
                result = self._unless_random(ctx, result)
        except CandidateFailure as exc:
            result = self.result(Status.FAIL, exc.detail, exc.signature)
        except ReferenceFailure as exc:
            result = self.result(Status.SKIP, f"reference outside its contract here: {exc}")
        except JudgeDeviceBroken:
            raise  # no later gate of this judge can run either (kdiff.verdicts.judge)
        except Exception as exc:  # noqa: BLE001 - a kdiff bug must not lose the run
            where = _kdiff_frame(exc)
            if sticky_device_error(f"{type(exc).__name__}: {exc}"):
                # CUDA reports a device-side assert at the next synchronisation, wherever
                # the judge then is (comparing outputs, say), not only in the reference.
                raise JudgeDeviceBroken(
                    f"the judge's CUDA context broke in {self.id} "
                    f"({where}): {type(exc).__name__}: {exc}"
                ) from None
            result = self.result(
                Status.ERROR, f"kdiff error: {type(exc).__name__}: {exc} ({where})"
            )
        if result.status is not Status.FAIL and ctx.call_fault is not None:
            # A caller's tensor overwritten by one of this gate's calls, which the gate itself
            # does not judge (GateContext.call): its own failure, where it has one, first.
            result = self.result(Status.FAIL, ctx.call_fault.detail, ctx.call_fault.signature)
        result.seconds = time.perf_counter() - start
        result.calls = ctx.calls_made - calls
        return result

    def _unless_random(self, ctx: GateContext, failed: GateResult) -> GateResult:
        """A value failure against a random reference says nothing about the candidate; one
        whose randomness check broke is not known to say anything either, so that check's
        exception goes on to run(), which reports kdiff's error."""
        why = ctx.random_reference()
        if why is None:
            return failed
        return self.result(
            Status.UNDER_SPECIFIED,
            f"{why}; not judged ({failed.signature} seen: {failed.detail[:160]})",
        )

    def result(
        self,
        status: Status,
        detail: str,
        signature: str | None = None,
        worst_ratio: float | None = None,
    ) -> GateResult:
        return GateResult(self.id, status, signature, detail, worst_ratio, klass=self.klass)


def _kdiff_frame(exc: BaseException) -> str:
    """file:line of the innermost frame of kdiff's own code that `exc` passed through
    (where in the judge it surfaced: a module named kdiff or kdiff.*, wherever the package's
    folders lie), else of the innermost frame."""
    frames = list(traceback.walk_tb(exc.__traceback__))
    ours = [
        (f, line)
        for f, line in frames
        if str(f.f_globals.get("__name__", "")).split(".")[0] == "kdiff"
    ] or frames
    frame, line = ours[-1]
    return f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{line}"


class GateInterrupted(KeyboardInterrupt):
    """Ctrl-C inside gate `gate`, with what its trials had shown by then."""

    def __init__(self, gate: str, so_far: str) -> None:
        super().__init__()
        self.gate, self.so_far = gate, so_far


@dataclass
class Trial:
    label: str
    inputs: list[Any]
    dtype: torch.dtype | None = NATIVE  # the problem's own precision, or a recast
    seed: int = BENCHMARK_SEED  # model seed
    bound_model: tolerance.BoundModel = tolerance.BoundModel.PROBABILISTIC
    call_options: dict[str, Any] = field(default_factory=dict)  # worker `call` options
    # The outputs of a call already made (the native check's), judged in place of a new call.
    answered: list[torch.Tensor] | None = None


@dataclass
class TrialLog:
    """What a gate's trials came to: the labels of those judged, those under-specified and
    those not judged (each with why), and the worst ratio to the bound seen."""

    judged_labels: list[str] = field(default_factory=list)
    under_specified: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    worst_ratio: float = 0.0
    worst_label: str = ""
    rounded: int = 0  # errors no larger than the roundings to the stored format

    @property
    def judged(self) -> int:
        return len(self.judged_labels)


class ThresholdedGate(Gate):
    """Runs trials, and judges each against the bound: the common loop of the thresholded
    gates. Subclasses provide `trials()` and the failure `signature`."""

    klass = GateClass.THRESHOLDED
    signature: ClassVar[str] = "exceeds_bound"

    def trials(self, ctx: GateContext) -> Iterator[Trial]:
        raise NotImplementedError

    def judge(self, ctx: GateContext) -> GateResult:
        return self.judge_trials(ctx, self.trials(ctx))

    def judge_trials(self, ctx: GateContext, trials: Iterable[Trial]) -> GateResult:
        """`trials` judged in turn: the first failure, else what they came to."""
        log = TrialLog()
        with self.reporting_interrupts(log):
            for trial in trials:
                failure = self.judge_trial(ctx, trial, log)
                if failure is not None:
                    return failure
        return self.summarize(log)

    @contextlib.contextmanager
    def reporting_interrupts(self, log: TrialLog) -> Iterator[None]:
        """Ctrl-C (a device budget's SIGINT) minutes into a long gate: the gate stays open,
        and what its trials showed so far reaches the report."""
        try:
            yield
        except KeyboardInterrupt:
            so_far = (
                f"after {self.summarize(log).detail}"
                if log.judged
                else "before any trial of it was judged"
            )
            raise GateInterrupted(self.id, so_far) from None

    def judge_trial(self, ctx: GateContext, trial: Trial, log: TrialLog) -> GateResult | None:
        try:
            ev = self.evaluate_trial(ctx, trial)
        except ReferenceFailure as exc:
            log.skipped.append(f"{trial.label}: {exc}")
            return None
        # Whether the candidate runs at all and returns the reference's shapes is judged even
        # where its values cannot be (a random reference's configuration it cannot run).
        got = self.call_trial(ctx, trial)
        check_structure(got.outputs, ev.reference)
        unjudgeable = self.unjudgeable(ctx, trial, ev, got)
        if unjudgeable is not None:
            log.skipped.append(f"{trial.label} [{ctx.dtype_name(trial.dtype)}]: {unjudgeable}")
            return None
        if ev.reference_ratio(trial.bound_model) > 1:
            log.under_specified.append(
                f"{trial.label}: the reference itself uses {ev.reference_ratio(trial.bound_model):.3g}x "
                f"of what the bound leaves it"
            )
            return None
        mismatches = ev.mismatches(got.outputs, trial.bound_model)
        if all(mm.judged == 0 for mm in mismatches) and any(mm.total for mm in mismatches):
            # a trial that judged no element vouches for nothing
            why = (
                "every pick is a near tie, which roundings decide"
                if ev.near_ties()
                else "no element is judged (the oracle or its bound is not finite anywhere)"
            )
            log.under_specified.append(f"{trial.label}: {why}")
            return None
        log.judged_labels.append(trial.label)
        for mm in mismatches:
            log.rounded += mm.rounded
            if mm.worst_ratio > log.worst_ratio:
                log.worst_ratio, log.worst_label = mm.worst_ratio, trial.label
            if not mm.ok:
                return self.result(
                    Status.FAIL,
                    f"{trial.label} [{ctx.dtype_name(trial.dtype)}]: {mm.describe()}",
                    self.signature,
                    mm.worst_ratio,
                )
        return None

    def unjudgeable(
        self, ctx: GateContext, trial: Trial, ev: Evaluation, got: CallResult
    ) -> str | None:
        """Why the candidate's answer `got` to `trial`, now made, cannot be judged here
        against `ev` (its arithmetic is not the one the bound is derived for), or None."""
        return None

    def evaluate_trial(self, ctx: GateContext, trial: Trial) -> Evaluation:
        """The oracle for one trial (a gate whose trials repeat inputs may reuse one)."""
        return ctx.evaluate(trial.inputs, trial.seed, trial.dtype)

    def call_trial(self, ctx: GateContext, trial: Trial) -> CallResult:
        """The candidate's answer to one trial (a gate may prepare the worker first)."""
        if trial.answered is not None:
            return CallResult(trial.answered, [], 0.0)
        return ctx.call(trial.inputs, trial.seed, trial.dtype, **trial.call_options)

    def summarize(self, log: TrialLog) -> GateResult:
        notes = []
        if log.under_specified:
            notes.append(
                f"{len(log.under_specified)} trial(s) under-specified ({log.under_specified[0]})"
            )
        if log.skipped:
            notes.append(
                f"{len(log.skipped)} trial(s) not judged ("  # each says why
                f"{log.skipped[0]})"
            )
        if log.judged == 0:
            if log.under_specified:
                return self.result(Status.UNDER_SPECIFIED, "; ".join(notes))
            return self.result(Status.SKIP, "; ".join(notes) or "no applicable trial")
        worst = (
            f"worst {log.worst_ratio:.3g}x of it ({log.worst_label})"
            if log.worst_label
            else "every error within the roundings to the stored format"
            if log.rounded
            else "exact"
        )
        detail = f"{log.judged} trial(s) within bound; {worst}"
        return self.result(Status.PASS, "; ".join([detail, *notes]), None, log.worst_ratio)
