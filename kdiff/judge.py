"""Judging one case: the native check and the gates, each in the case's own worker process."""
from __future__ import annotations

import time

import pluggy

from kdiff.gates.base import GateContext
from kdiff.gates.registry import select
from kdiff.model import Case, GateResult, NativeVerdict, Verdict
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
        for gate in gates:
            results[gate.id] = gate.run(ctx)
    return Verdict(case, native, results, scaled_sizes=ctx.scaled_sizes)
