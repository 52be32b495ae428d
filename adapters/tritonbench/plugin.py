"""The TritonBench adapter (TritonBench-G and -T): gold files and generated outputs (jsonl)
as cases, judged natively by call and execution accuracy and by the gates through
materialised KernelBench-format files."""
from __future__ import annotations

from kdiff.adapters.tritonbench.discover import BENCH, discover
from kdiff.adapters.tritonbench.native import PRESETS, run_native
from kdiff.judging.hookspecs import hookimpl


@hookimpl
def kdiff_benches():
    return [(BENCH, "TritonBench-G / -T data and generated outputs (jsonl)")]


@hookimpl
def kdiff_native_presets(bench):
    if bench == BENCH:
        return list(PRESETS)


@hookimpl
def kdiff_describe_preset(bench, preset):
    if bench == BENCH:
        return PRESETS.get(preset)


@hookimpl
def kdiff_discover(bench, config):
    if bench == BENCH:
        return discover(config)


@hookimpl
def kdiff_native_check(bench, case, ctx, preset):
    if bench == BENCH:
        return run_native(case, preset, ctx.device, ctx.candidate.limits)


@hookimpl
def kdiff_entry_points(bench, case):
    if bench == BENCH:
        return ("ModelNew",)
