"""Judging one case: the native check and the gates, each in the case's own worker process."""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import pluggy

from kdiff.data.model import (
    NOT_RUN,
    TRANSIENT_ERROR_KIND,
    Case,
    GateResult,
    NativeVerdict,
    Status,
    Verdict,
)
from kdiff.data.problem import LoadError, load_problem
from kdiff.data.seeding import fp32_means_fp32, one_thread
from kdiff.gates.base import GateInterrupted
from kdiff.gates.registry import in_judging_order, select
from kdiff.judging.context import (
    GateContext,
    JudgeDeviceBroken,
    ReferenceBrokeDevice,
    sticky_device_error,
)
from kdiff.judging.heap import keep_freed_memory
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.process import CandidateFailure, CandidateLoadError
from kdiff.sandbox.replies import CheckedCandidate
from kdiff.verdicts.provenance import judge_provenance, read_benchmark_calls


def native_preset(pm: pluggy.PluginManager, config: RunConfig) -> str:
    presets = pm.hook.kdiff_native_presets(bench=config.bench) or []
    if config.native is None:
        return pm.hook.kdiff_default_preset(bench=config.bench, config=config) or presets[0]
    if config.native not in presets:
        raise KeyError(
            f"unknown native preset '{config.native}' for {config.bench}; "
            f"known: {', '.join(presets)}"
        )
    return config.native


class JudgingInterrupted(KeyboardInterrupt):
    """Ctrl-C during the gates. `verdict` holds the gates judged so far and the others as
    errors, "not run": a failure already found still rejects; otherwise the verdict is open."""

    def __init__(self, verdict: Verdict, judged: int) -> None:
        super().__init__()
        self.verdict, self.judged = verdict, judged


# Fresh judges a case may take to leave out, one by one, the draws on which its reference breaks
# the judge's CUDA context; a break beyond them skips the rest of that gate.
MAX_BROKEN_DRAWS = 8

# Called after each gate with the verdict so far (the gates not yet judged as errors, "not
# run"), the gate's result and how many gates are judged: `kdiff verify` prints progress and
# rewrites its reports there.
GateCallback = Callable[[Verdict, GateResult, int], None]
# Called with what is judged next ("the native check", then each gate's id): `kdiff verify`'s
# heartbeat names it.
StartCallback = Callable[[str], None]


def _so_far(
    case: Case,
    native: NativeVerdict,
    results: dict[str, GateResult],
    gates: list,
    ctx: GateContext,
    why: str,
    why_for: dict[str, str] | None = None,
) -> Verdict:
    """The verdict of the gates judged so far; the others are errors that say why not
    (`why_for` a gate's own reason, else `why`)."""
    why_for = why_for or {}
    full = {
        gate.id: results.get(gate.id)
        or GateResult(
            gate.id, Status.ERROR, detail=f"{NOT_RUN}{why_for.get(gate.id, why)}", klass=gate.klass
        )
        for gate in gates
    }
    return Verdict(case, native, full, scaled_sizes=ctx.scaled_sizes)


# What stands in a verdict told while its candidate still runs for the secret seed its trials'
# labels name (`withheld`).
WITHHELD_SEED = "(withheld until the verdict is complete)"


def withheld(verdict: Verdict, secret: int | None) -> Verdict:
    """`verdict` as `on_gate` is told it while the candidate's worker still runs: the verdict's
    secret seed (GateContext.chosen_seed), which the labels of chosen trials name, left out of
    every gate's detail. `kdiff verify` rewrites its reports with it after each gate, and a
    worker reads what any user may: with the secret it makes every later gate's chosen draws
    with kdiff's own gates (tests/hostile/reads_its_verdict_so_far.py). The complete verdict,
    reported once the worker is gone, names it for --chosen-seed."""
    if secret is None:
        return verdict
    gates = {
        gate: dataclasses.replace(result, detail=result.detail.replace(str(secret), WITHHELD_SEED))
        for gate, result in verdict.gates.items()
    }
    return dataclasses.replace(verdict, gates=gates, chosen_seed=None)


def decided(verdict: Verdict) -> dict[str, GateResult]:
    """The gate results of `verdict` that were judged (not "not run")."""
    return {g: r for g, r in verdict.gates.items() if not r.not_run}


def as_a_judge() -> None:
    """This process's settings for judging: fp32 as fp32, one thread, freed memory kept."""
    fp32_means_fp32()
    one_thread()
    keep_freed_memory()


def judge_case(
    case: Case,
    config: RunConfig,
    pm: pluggy.PluginManager,
    preset: str | None = None,
    on_gate: GateCallback | None = None,
    resume: Verdict | None = None,
    on_start: StartCallback | None = None,
) -> Verdict:
    """The verdict of `case`. With `resume` (a resumable verdict of this case, from a judge
    whose CUDA context the reference broke), its native check and decided gates stand and
    the gates after them are judged here."""
    as_a_judge()
    preset = preset or native_preset(pm, config)
    gates = select(config.gates)
    if case.discovery_error:
        return Verdict(
            case,
            NativeVerdict(None, preset, reason=case.discovery_error),
            {},
            error=case.discovery_error,
        )
    try:
        problem = load_problem(case.problem)
    except LoadError as exc:
        return Verdict(case, NativeVerdict(None, preset, reason=str(exc)), {}, error=str(exc))
    entry = pm.hook.kdiff_entry_points(bench=config.bench, case=case) or ("ModelNew",)
    with CheckedCandidate(
        case.problem, case.candidate, config.device, tuple(entry), config.limits
    ) as candidate:
        ctx = GateContext(problem, candidate, config.gate_options)
        if (declared := ctx.declaration_error()) is not None:
            return Verdict(case, NativeVerdict(None, preset, reason=declared), {}, error=declared)
        if resume is None and (history := ctx.history_dependence()) is not None:
            return Verdict(case, NativeVerdict(None, preset, reason=history), {}, error=history)
        start = time.perf_counter()
        if on_start is not None and resume is None:
            on_start("the native check")
        try:
            native = (
                resume.native
                if resume is not None
                else pm.hook.kdiff_native_check(
                    bench=config.bench, case=case, ctx=ctx, preset=preset
                )
            )
        except CandidateLoadError as exc:
            # The harness records a kernel that does not import as not compiled: a reject.
            native = NativeVerdict(False, preset, reason=exc.detail)
            return Verdict(case, native, {}, error=exc.detail, error_kind="candidate")
        except CandidateFailure as exc:
            native = NativeVerdict(False, preset, reason=f"{exc.signature}: {exc.detail}")
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, JudgeDeviceBroken) and not sticky_device_error(why):
                raise
            return device_broken(
                Verdict(
                    case, NativeVerdict(None, preset, reason=why), {}, scaled_sizes=ctx.scaled_sizes
                ),
                why,
            )
        native.recorded = case.recorded_accept
        if resume is None:
            native.seconds = time.perf_counter() - start
        # What the benchmark's own calls ran; the gates' calls are added to it at the end (a
        # native check that calls no worker, as TritonBench's runs scripts, leaves it to them).
        benchmark_calls = read_benchmark_calls(ctx)
        results = decided(resume) if resume is not None else {}
        broken = resume.broken_draws if resume is not None else ()
        ctx.broken_draws = frozenset(broken)
        if resume is not None and resume.chosen_seed is not None:
            ctx.chosen_seed = resume.chosen_seed
        try:
            for gate in in_judging_order(gates):
                if gate.id in results:
                    continue
                if on_start is not None:
                    on_start(gate.id)
                try:
                    results[gate.id] = gate.run(ctx)
                except ReferenceBrokeDevice as exc:
                    # What ReferenceFailure is on the CPU: this input set is outside the
                    # contract. The gates before it stand; a fresh judge goes on, judging
                    # this gate again without that draw where it is named, else after it.
                    again = exc.draw is not None and len(broken) < MAX_BROKEN_DRAWS
                    if not again:
                        results[gate.id] = gate.result(
                            Status.SKIP, f"reference outside its contract here: {exc}"
                        )
                    verdict = device_broken(
                        _so_far(
                            case,
                            native,
                            results,
                            gates,
                            ctx,
                            f"the reference broke the judge's CUDA context in {gate.id}",
                        ),
                        str(exc),
                    )
                    verdict.resumable = True
                    verdict.broken_draws = (*broken, exc.draw) if again else broken
                    verdict.chosen_seed = ctx.chosen_seed
                    if on_gate is not None and not again:
                        told = withheld(verdict, ctx.chosen_seed)
                        on_gate(told, told.gates[gate.id], len(results))
                    return verdict
                except JudgeDeviceBroken as exc:
                    results[gate.id] = gate.result(Status.ERROR, f"kdiff error: {exc}")
                    return device_broken(
                        _so_far(
                            case,
                            native,
                            results,
                            gates,
                            ctx,
                            f"the judge's CUDA context broke in {gate.id}",
                        ),
                        str(exc),
                    )
                if on_gate is not None:
                    told = withheld(
                        _so_far(case, native, results, gates, ctx, "not yet judged"),
                        ctx.chosen_seed,
                    )
                    on_gate(told, told.gates[gate.id], len(results))
                if config.exitfirst and results[gate.id].status is Status.FAIL:
                    break
        except KeyboardInterrupt as exc:
            why = "the judging was interrupted"
            inside = (
                {exc.gate: f"{why} in it, {exc.so_far}"} if isinstance(exc, GateInterrupted) else {}
            )
            raise JudgingInterrupted(
                _so_far(case, native, results, gates, ctx, why, inside), len(results)
            ) from None
        provenance = judge_provenance(ctx, benchmark_calls)
    # In catalogue order; under --exitfirst the gates after the first failure are not run.
    verdict = _so_far(case, native, results, gates, ctx, "exitfirst")
    verdict.provenance = provenance
    verdict.broken_draws = broken
    return verdict


def device_broken(verdict: Verdict, why: str) -> Verdict:
    """The verdict of a judge whose own CUDA context broke (a device-side assert in the
    reference or the oracle): nothing after it can run in this process, which judges no
    later case. A gate the candidate already failed stands: its values were read back
    before the break (a broken context fails every later read), so the reject is decided.
    Otherwise what ran says nothing about the kernel: an error of the judge's (reported,
    never stored), and the executor judges the case again in a fresh judge process."""
    verdict.judge_broken = True
    if not verdict.failed_gates:
        verdict.error = why.splitlines()[0]
        verdict.error_kind = TRANSIENT_ERROR_KIND
    return verdict
