"""The GPU MODE adapter (gpu-mode/reference-kernels problems, judged as kernelbot runs them):
problems as KernelBench-format files (materialise), the submissions they ship as cases
(discover), kernelbot's test mode as the native check (native)."""
from __future__ import annotations

from kdiff.adapters.gpumode.discover import BENCH, case_from_paths, discover
from kdiff.adapters.gpumode.native import PRESETS, run_native
from kdiff.judging.hookspecs import hookimpl


@hookimpl
def kdiff_benches():
    return [(BENCH, "GPU MODE reference-kernels problems and their labelled solutions")]


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
        return run_native(ctx, bool(case.metadata.get("graph_capture")))


@hookimpl
def kdiff_case_from_paths(bench, problem, candidate):
    if bench == BENCH:
        return case_from_paths(problem, candidate)
