"""Judging one case: the native check and the gates, each in the case's own worker process."""
from __future__ import annotations

import time

import pluggy

from kdiff.gates.base import GateContext
from kdiff.gates.registry import select
from kdiff.model import Case, GateResult, NativeVerdict, Status, Verdict
from kdiff.problem import LoadError, load_problem
from kdiff.runconfig import RunConfig
from kdiff.sandbox import CandidateFailure, CandidateLoadError, CandidateProcess
from kdiff.seeding import fp32_means_fp32, one_thread


def native_preset(pm: pluggy.PluginManager, config: RunConfig) -> str:
    presets = pm.hook.kdiff_native_presets(bench=config.bench) or []
    if config.native is None:
        return pm.hook.kdiff_default_preset(bench=config.bench, config=config) or presets[0]
    if config.native not in presets:
        raise KeyError(f"unknown native preset '{config.native}' for {config.bench}; "
                       f"known: {', '.join(presets)}")
    return config.native


class JudgingInterrupted(KeyboardInterrupt):
    """Ctrl-C during the gates. `verdict` holds the gates judged so far and the others as
    errors, "not run": a failure already found still rejects; otherwise the verdict is open."""

    def __init__(self, verdict: Verdict, judged: int) -> None:
        super().__init__()
        self.verdict, self.judged = verdict, judged


def judge_case(case: Case, config: RunConfig, pm: pluggy.PluginManager,
               preset: str | None = None) -> Verdict:
    fp32_means_fp32()
    one_thread()
    preset = preset or native_preset(pm, config)
    gates = select(config.gates)
    if case.discovery_error:
        return Verdict(case, NativeVerdict(None, preset, reason=case.discovery_error), {},
                       error=case.discovery_error)
    try:
        problem = load_problem(case.problem)
    except LoadError as exc:
        return Verdict(case, NativeVerdict(None, preset, reason=str(exc)), {}, error=str(exc))
    entry = pm.hook.kdiff_entry_points(bench=config.bench, case=case) or ("ModelNew",)
    with CandidateProcess(case.problem, case.candidate, config.device, tuple(entry),
                          config.limits) as candidate:
        ctx = GateContext(problem, candidate, config.gate_options)
        start = time.perf_counter()
        try:
            native = pm.hook.kdiff_native_check(bench=config.bench, case=case, ctx=ctx,
                                                preset=preset)
        except CandidateLoadError as exc:
            # The harness records a kernel that does not import as not compiled: a reject.
            native = NativeVerdict(False, preset, reason=exc.detail)
            return Verdict(case, native, {}, error=exc.detail, error_kind="candidate")
        except CandidateFailure as exc:
            native = NativeVerdict(False, preset, reason=f"{exc.signature}: {exc.detail}")
        native.recorded = case.recorded_accept
        native.seconds = time.perf_counter() - start
        results: dict[str, GateResult] = {}
        try:
            for gate in gates:
                results[gate.id] = gate.run(ctx)
        except KeyboardInterrupt:
            judged = len(results)
            for gate in gates:
                results.setdefault(gate.id, GateResult(
                    gate.id, Status.ERROR, detail="not run: the judging was interrupted"))
            raise JudgingInterrupted(Verdict(case, native, results,
                                             scaled_sizes=ctx.scaled_sizes), judged) from None
    return Verdict(case, native, results, scaled_sizes=ctx.scaled_sizes)
