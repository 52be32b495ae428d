"""One invocation of a command: its configuration from the arguments, its reports, and its
exit status. Shared by every subcommand and the pytest plugin; imports nothing heavy at module
level."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_UNFINISHED = 0, 1, 2, 3


class UsageError(Exception):
    """Bad usage or unreadable input: one line, exit status 2."""


# How many failing kernels' explanations `kdiff run` prints without -v: a screen's worth;
# the reports hold every one.
EXPLAINED_WITHOUT_VERBOSE = 10


def device_name(requested: str | None) -> str:
    import torch
    if requested == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is available")
    device = requested or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        from kdiff.sandbox.interpreter_device import refusal
        why = refusal()
        if why is not None:
            raise UsageError(why)
    return device


def gate_ids(args: argparse.Namespace) -> list[str] | None:
    """--gates as given, checked against the catalogue (None: all)."""
    if not args.gates:
        return None
    from kdiff.gates.registry import checked_ids
    try:
        return checked_ids([g.strip() for g in args.gates.split(",") if g.strip()])
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None


def make_config(args: argparse.Namespace, bench: str):
    from kdiff.data.model import Profile
    from kdiff.gates.registry import QUICK_GATES
    from kdiff.judging.context import GateOptions, checked_chosen_seed
    from kdiff.judging.runconfig import RunConfig
    from kdiff.sandbox.process import SandboxLimits
    gates = gate_ids(args)
    profile = Profile(getattr(args, "profile", None) or Profile.FULL)
    if profile is Profile.QUICK and gates is None:
        gates = list(QUICK_GATES)
    try:
        options = GateOptions(device=device_name(args.device), profile=profile)
    except ValueError as exc:  # a setting it reads (KDIFF_CHOSEN_SEED)
        raise UsageError(str(exc)) from None
    chosen_seed = getattr(args, "chosen_seed", None)  # not a pytest-plugin option
    if chosen_seed is not None:
        try:
            options.chosen_seed = checked_chosen_seed(chosen_seed)
        except ValueError as exc:
            raise UsageError(f"argument --chosen-seed: {exc}") from None
    if args.dtypes:
        options.dtypes = tuple(args.dtypes.split(","))
    max_elements = getattr(args, "max_elements", None)  # not a pytest-plugin option
    if max_elements is not None:
        options.max_elements = max_elements
    limits = SandboxLimits()
    if args.call_timeout:
        limits.call_timeout = args.call_timeout
    if getattr(args, "case_timeout", None):
        limits.case_timeout = args.case_timeout
    return RunConfig(bench=bench, native=args.native, gates=gates, gate_options=options,
                     limits=limits, exitfirst=bool(getattr(args, "exitfirst", False)))


def undecided(verdicts: list) -> list:
    """The kernels whose verdict is open (n/a): a kdiff error on a gate, a broken problem."""
    return [v for v in verdicts if v.verifier_accept is None]


def without_own_kernel(verdicts: list) -> list:
    """The kernels whose provenance does not show a kernel of their own running
    (library-only, reference-call, or a record the judge could not read)."""
    return [v for v in verdicts if v.provenance is not None
            and not v.provenance.shows_own_kernel]


def exit_status(verdicts: list, fail_on: str, undecided_ok: bool = False,
                require_own_kernel: bool = False) -> int:
    if fail_on == "never":
        return EXIT_OK
    if fail_on == "violation":
        found = any(v.verifier_accept is False for v in verdicts) or (
            not undecided_ok and bool(undecided(verdicts))) or (
            require_own_kernel and bool(without_own_kernel(verdicts)))
    elif fail_on == "provenance":
        found = bool(without_own_kernel(verdicts))
    else:
        found = any(v.native.accept is not None and v.verifier_accept is not None
                    and v.native.accept != v.verifier_accept for v in verdicts)
    return EXIT_FOUND if found else EXIT_OK


@dataclass(frozen=True)
class ReportOptions:
    """Which reports a command writes and where (None: that report is not written), and what
    the JUnit report counts as a failure."""

    json: Path | None = None
    markdown: Path | None = None
    junit: Path | None = None
    # --require-own-kernel: the JUnit report fails a kernel not seen running a kernel of its own
    junit_requires_own_kernel: bool = False


def write_reports(paths: ReportOptions, verdicts: list, bench: str, preset: str,
                  device: str) -> None:
    from kdiff.reports import json_report
    if paths.json:
        json_report.write(paths.json, json_report.report(verdicts, bench, preset, device))
    if paths.markdown:
        from kdiff.reports import markdown
        markdown.write(paths.markdown, verdicts, bench, preset, device)
    if paths.junit:
        from kdiff.reports import junit
        junit.write(paths.junit, verdicts, bench,
                    require_own_kernel=paths.junit_requires_own_kernel)


def preset_text(pm, bench: str, preset: str) -> str:
    """'kernelbench-v0.1 (KernelBench v0/v0.1: ... atol=rtol=1e-2)': the name and what it
    checks, as the adapter describes it."""
    described = pm.hook.kdiff_describe_preset(bench=bench, preset=preset)
    return f"{preset} ({described})" if described else preset


def open_store(path: Path):
    """The results store at `path`; a file that is no results store is unreadable input."""
    from kdiff.verdicts.store import ResultsStore, UnreadableStore
    try:
        return ResultsStore(path)
    except UnreadableStore as exc:
        raise UsageError(str(exc)) from None
