"""The SOL-ExecBench adapter (SOL-ExecBench's and FlashInfer-Bench's definition / workload /
solution schema): definitions as KernelBench-format problems and solutions as candidates
(materialise), the solutions beside each definition as cases (discover), the benchmark's
correctness loop and matched-ratio rule as the native check (native)."""
from __future__ import annotations

from kdiff.adapters.solexecbench.discover import BENCH, case_from_paths, discover
from kdiff.adapters.solexecbench.native import PRESETS, run_native
from kdiff.judging.hookspecs import hookimpl


@hookimpl
def kdiff_benches():
    return [(BENCH, "SOL-ExecBench / FlashInfer-Bench definitions, workloads and solutions")]


@hookimpl
def kdiff_native_presets(bench):
    if bench == BENCH:
        return list(PRESETS)


@hookimpl
def kdiff_describe_preset(bench, preset):
    if bench == BENCH and preset in PRESETS:
        return PRESETS[preset]


@hookimpl
def kdiff_discover(bench, config):
    if bench == BENCH:
        return discover(config)


@hookimpl
def kdiff_native_check(bench, case, ctx, preset):
    if bench == BENCH:
        return run_native(ctx)


@hookimpl
def kdiff_case_from_paths(bench, problem, candidate):
    if bench == BENCH:
        return case_from_paths(problem, candidate)
