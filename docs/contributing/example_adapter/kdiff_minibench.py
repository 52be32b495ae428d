"""An example kdiff adapter, as a third-party package would ship it: the bench `minibench`.

The layout it reads (`--root`; without one, the `minibench/` folder beside this file):

    problems/NAME.py            a problem in KernelBench's convention (Model, get_inputs,
                                get_init_inputs, size constants)
    solutions/NAME/SAMPLE.py    the candidates for it, each defining ModelNew

and its native check: three trials, each of the candidate's outputs `allclose` to the
reference's with atol = rtol = 1e-3. docs/contributing/adding-an-adapter.md walks through it;
tests/test_example_adapter.py registers it with pluggy and judges its cases.
"""
from __future__ import annotations

import fnmatch
from pathlib import Path

import torch

from kdiff.data.model import Case, NativeVerdict
from kdiff.judging.context import ReferenceFailure
from kdiff.judging.hookspecs import DiscoveryError, hookimpl

BENCH = "minibench"
PRESET = "minibench"
TRIAL_SEEDS = (0, 1, 2)  # the seed of each trial's get_inputs(), as the bench draws them
# The bench's own acceptance rule (what it publishes), not a bound of kdiff's: the native
# check reproduces the benchmark, whatever its tolerance.
ATOL = RTOL = 1e-3
SHIPPED_ROOT = Path(__file__).resolve().parent / "minibench"


@hookimpl
def kdiff_benches():
    return [(BENCH, "the example adapter of docs/contributing/adding-an-adapter.md")]


@hookimpl
def kdiff_native_presets(bench):
    if bench == BENCH:
        return [PRESET]


@hookimpl
def kdiff_describe_preset(bench, preset):
    if bench == BENCH and preset == PRESET:
        return f"minibench: {len(TRIAL_SEEDS)} trials, allclose atol={ATOL:g} rtol={RTOL:g}"


@hookimpl
def kdiff_discover(bench, config):
    if bench != BENCH:
        return None
    root = config.root or SHIPPED_ROOT
    problems = sorted((root / "problems").glob("*.py"))
    if not problems:
        raise DiscoveryError(f"--root {root}: no problems/*.py")
    if config.problems:
        problems = [p for p in problems
                    if any(fnmatch.fnmatch(p.stem, pattern) for pattern in config.problems)]
    return [Case(id=f"{problem.stem}/{candidate.stem}", bench=BENCH, problem=problem,
                 candidate=candidate, metadata={"problem": problem.stem})
            for problem in problems
            for candidate in sorted((root / "solutions" / problem.stem).glob("*.py"))]


@hookimpl
def kdiff_native_check(bench, case, ctx, preset):
    """The bench's check, through the judging context: `ctx.run_reference` runs the reference
    in the judge, `ctx.call` the candidate in its confined worker. A candidate that raises
    there is a native reject; kdiff's judge turns the exception into one. A reference that
    raises leaves the verdict open (accept None): the bench cannot judge anyone there."""
    if bench != BENCH:
        return None
    for trial, seed in enumerate(TRIAL_SEEDS):
        inputs = ctx.benchmark_inputs(seed)
        try:
            want = [w.cpu() for w in ctx.run_reference(inputs)]
        except ReferenceFailure as exc:
            return NativeVerdict(None, preset, failed_trial=trial, reason=str(exc))
        got = [g.cpu() for g in ctx.call(inputs).outputs]
        if [g.shape for g in got] != [w.shape for w in want]:
            return NativeVerdict(False, preset, failed_trial=trial, reason="output shape mismatch")
        if not all(torch.allclose(g, w, atol=ATOL, rtol=RTOL) for g, w in zip(got, want)):
            return NativeVerdict(False, preset, failed_trial=trial, reason="output mismatch")
    return NativeVerdict(True, preset, reason=f"{len(TRIAL_SEEDS)}/{len(TRIAL_SEEDS)} trials "
                         f"within atol={ATOL:g} rtol={RTOL:g}")
