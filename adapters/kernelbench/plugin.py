"""The KernelBench adapter: problems `KernelBench/level{L}/{P}_{Name}.py`, runs
`runs/RUN/level_{L}_problem_{P}_sample_{S}_kernel.py` with `eval_results.json`."""
from __future__ import annotations

import dataclasses

from kdiff.adapters.kernelbench import discover as discovery
from kdiff.adapters.kernelbench.native import PRESETS, run_native
from kdiff.judging.hookspecs import hookimpl

BENCH = discovery.BENCH


@hookimpl
def kdiff_benches():
    return [(BENCH, "KernelBench problems and runs (the shipped corpus when no --root)")]


@hookimpl
def kdiff_native_presets(bench):
    if bench == BENCH:
        return list(PRESETS)


@hookimpl
def kdiff_describe_preset(bench, preset):
    if bench == BENCH and preset in PRESETS:
        return PRESETS[preset].description


@hookimpl
def kdiff_discover(bench, config):
    if bench == BENCH:
        return [_judged_on(case, config.device) for case in discovery.discover(config)]


def _judged_on(case, device):
    """The case, or, where `device` does not judge it, an error row that says why (listed,
    undecided)."""
    why = None if case.discovery_error else discovery.not_judged_on(case, device)
    return case if why is None else dataclasses.replace(case, discovery_error=why)


@hookimpl
def kdiff_not_judged_on(bench, case, device):
    if bench == BENCH:
        return discovery.not_judged_on(case, device)


@hookimpl
def kdiff_problem_files(bench, root):
    if bench == BENCH:
        return discovery.problem_files(root if root is not None else discovery.shipped_corpus())


@hookimpl
def kdiff_native_check(bench, case, ctx, preset):
    if bench == BENCH:
        return run_native(ctx, PRESETS[preset])


@hookimpl
def kdiff_entry_points(bench, case):
    if bench == BENCH:
        return discovery.entry_points(case)


@hookimpl
def kdiff_default_preset(bench, config):
    # The shipped red team is built to pass the setting most published audits used.
    if bench == BENCH and config.root is None:
        return "kernelbench-v0.1"
