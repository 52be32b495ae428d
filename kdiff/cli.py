"""`kdiff`: the command line.

Exit statuses: 0 nothing selected by --fail-on was found; 1 something was; 2 bad usage or
unreadable input; 3 the run could not finish.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Sequence

EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_UNFINISHED = 0, 1, 2, 3


class UsageError(Exception):
    """Bad usage or unreadable input: one line, exit status 2."""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--native", metavar="PRESET", help="native-check preset (default: the "
                   "bench's own, e.g. kernelbench)")
    p.add_argument("--gates", metavar="ID,...", help="run only these gates")
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="where candidates run (default: cuda when available)")
    p.add_argument("--json", metavar="PATH", type=Path, help="write the JSON report")
    p.add_argument("--markdown", metavar="PATH", type=Path, help="write a Markdown report")
    p.add_argument("--junit", metavar="PATH", type=Path, help="write JUnit XML")
    p.add_argument("--fail-on", choices=["violation", "disagreement", "never"],
                   default="violation")
    p.add_argument("--call-timeout", type=float, default=None, metavar="S",
                   help="seconds one call of the candidate may take")
    p.add_argument("--case-timeout", type=float, default=None, metavar="S",
                   help="wall budget of one kernel, all its gates together (default 3600)")
    p.add_argument("--dtypes", default=None, metavar="D,...",
                   help="working dtypes for PRC-01 (default: the problem's KDIFF_DTYPES or "
                   "float32)")
    p.add_argument("--max-elements", type=int, default=None, metavar="N",
                   help="judge a problem with an input or a reference output of more than N "
                   "elements at smaller sizes of the same problem, native check included "
                   "(upstream KernelBench inputs reach 4e9 elements); the report lists the "
                   "sizes judged at")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kdiff", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("gates", help="list the twelve gates")
    g.add_argument("--json", action="store_true", help="print JSON")

    v = sub.add_parser("verify", help="judge one candidate against one problem")
    v.add_argument("--problem", required=True, type=Path)
    v.add_argument("--candidate", required=True, type=Path)
    _common(v)

    r = sub.add_parser("run", help="judge a benchmark's kernels and tabulate the disagreement")
    r.add_argument("--bench", required=True)
    r.add_argument("--root", type=Path, help="the benchmark checkout (default: shipped corpus)")
    r.add_argument("--runs", type=Path, help="a runs folder of generated kernels")
    r.add_argument("--generated", type=Path, help="generated outputs (jsonl)")
    r.add_argument("--level", type=int)
    r.add_argument("--problems", help="problem ids or globs, comma-separated")
    r.add_argument("--jobs", type=int, default=None)
    r.add_argument("--store", type=Path, help="results store (SQLite; default: "
                   "kdiff-store.sqlite beside the reports, or in ./kdiff-out)")
    r.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local processes, or a Ray cluster (RAY_ADDRESS, else a local one)")
    _common(r)

    rp = sub.add_parser("report", help="render a run's reports from a results store alone")
    rp.add_argument("--store", required=True, type=Path, help="the results store (SQLite)")
    rp.add_argument("--run", metavar="ID", help="which run (default: the latest; a prefix of "
                    "an id will do)")
    rp.add_argument("--list", action="store_true", help="list the runs in the store")
    rp.add_argument("--json", metavar="PATH", type=Path, help="write the JSON report")
    rp.add_argument("--markdown", metavar="PATH", type=Path, help="write a Markdown report")
    rp.add_argument("--junit", metavar="PATH", type=Path, help="write JUnit XML")
    rp.add_argument("--fail-on", choices=["violation", "disagreement", "never"],
                    default="violation")

    t = sub.add_parser("tune", help="tune a candidate's launch settings, every configuration "
                       "judged by the gates before it may win (docs/tune.md)")
    t.add_argument("--problem", required=True, type=Path)
    t.add_argument("--candidate", required=True, type=Path,
                   help="declares KDIFF_TUNE_SPACE and KDIFF_TUNE_CONFIG")
    t.add_argument("--budget", type=int, default=32, help="new configurations per method")
    t.add_argument("--methods", default="grpo,random,exhaustive,autotuner")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--timer", choices=["do_bench", "wall"], default="do_bench")
    t.add_argument("--time-dtype", default=None, help="cast the timed inputs (e.g. bfloat16)")
    t.add_argument("--time-sizes", default=None, metavar="JSON",
                   help='problem sizes to time at, e.g. \'{"seq_len": 8192}\'')
    _common(t)

    c = sub.add_parser("calibrate", help="honest noise against defective error, per gate")
    c.add_argument("--json", type=Path)
    c.add_argument("--plot", type=Path)
    c.add_argument("--device", choices=["cpu", "cuda"], default=None)
    c.add_argument("--jobs", type=int, default=None, help="judges at once (default: one per "
                   "GPU, or per core); several may share one GPU")
    return parser


def _device(requested: str | None) -> str:
    import torch
    if requested == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is available")
    return requested or ("cuda" if torch.cuda.is_available() else "cpu")


def cmd_gates(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from kdiff.gates.registry import all_gates
    gates = all_gates()
    if args.json:
        print(json.dumps([{"id": g.id, "name": g.name, "class": g.klass.value} for g in gates]))
    else:
        print(tabulate([[g.id, g.name, g.klass.value, g.summary] for g in gates],
                       headers=["id", "name", "class", "checks"]))
    return EXIT_OK


def checked_jobs(jobs: int | None) -> int | None:
    """--jobs as given (None: the default), refused below 1."""
    if jobs is not None and jobs < 1:
        raise UsageError("--jobs must be at least 1")
    return jobs


def make_config(args: argparse.Namespace, bench: str):  # noqa: ANN201
    from kdiff.gates.base import GateOptions
    from kdiff.runconfig import RunConfig
    from kdiff.sandbox import SandboxLimits
    options = GateOptions(device=_device(args.device))
    if args.dtypes:
        options.dtypes = tuple(args.dtypes.split(","))
    max_elements = getattr(args, "max_elements", None)  # not a pytest-plugin option
    if max_elements is not None:
        if max_elements < 1:
            raise UsageError("--max-elements must be at least 1")
        options.max_elements = max_elements
    limits = SandboxLimits()
    if args.call_timeout:
        limits.call_timeout = args.call_timeout
    if getattr(args, "case_timeout", None):
        limits.case_timeout = args.case_timeout
    gates = [g.strip() for g in args.gates.split(",")] if args.gates else None
    if gates:
        from kdiff.gates.registry import select
        try:
            select(gates)
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
    return RunConfig(bench=bench, native=args.native, gates=gates, gate_options=options,
                     limits=limits)


def exit_status(verdicts: list, fail_on: str) -> int:
    if fail_on == "never":
        return EXIT_OK
    if fail_on == "violation":
        found = any(v.verifier_accept is False for v in verdicts)
    else:
        found = any(v.native.accept is not None and v.verifier_accept is not None
                    and v.native.accept != v.verifier_accept for v in verdicts)
    return EXIT_FOUND if found else EXIT_OK


def write_reports(args: argparse.Namespace, verdicts: list, bench: str, preset: str,
                  device: str) -> None:
    from kdiff.reports import json_report
    if args.json:
        json_report.write(args.json, json_report.report(verdicts, bench, preset, device))
    if getattr(args, "markdown", None):
        from kdiff.reports import markdown
        markdown.write(args.markdown, verdicts, bench, preset, device)
    if getattr(args, "junit", None):
        from kdiff.reports import junit
        junit.write(args.junit, verdicts, bench)


def cmd_verify(args: argparse.Namespace) -> int:
    from kdiff.gates.registry import select
    from kdiff.judge import JudgingInterrupted, judge_case, native_preset
    from kdiff.model import Case
    from kdiff.plugins import manager
    from kdiff.reports.terminal import verdict_table
    for role, path in (("problem", args.problem), ("candidate", args.candidate)):
        if not path.is_file():
            raise UsageError(f"{path}: {role} file not found")
    config = make_config(args, "kernelbench")
    pm = manager()
    try:
        preset = native_preset(pm, config)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    case = Case(id=f"{args.problem.stem}::{args.candidate.stem}", problem=args.problem,
                candidate=args.candidate)
    unfinished = False
    started = time.monotonic()
    total = len(select(config.gates))

    def after_gate(so_far, result, judged: int) -> None:
        # a gate's line as it lands, and the reports rewritten with the gates judged so far:
        # a verify killed outright (a device budget's SIGKILL) keeps all but the gate it was in
        print(f"[{judged:2d}/{total} {time.monotonic() - started:7.1f}s] {result.gate} "
              f"{result.status.value}" + (f" {result.signature}" if result.signature else ""),
              file=sys.stderr, flush=True)
        write_reports(args, [so_far], "kernelbench", preset, config.device)

    try:
        verdict = judge_case(case, config, pm, preset, on_gate=after_gate)
    except JudgingInterrupted as stop:  # report the gates judged so far (a device's budget)
        verdict, unfinished = stop.verdict, True
        print(f"kdiff: interrupted after {stop.judged} of {len(verdict.gates)} gates; "
              "reporting those", file=sys.stderr)
    if verdict.error:  # a file that does not load: bad input, not a verdict
        raise UsageError(verdict.error)
    names = {g.id: g.name for g in select(config.gates)}
    print(verdict_table(verdict, names))
    write_reports(args, [verdict], "kernelbench", preset, config.device)
    return EXIT_UNFINISHED if unfinished else exit_status([verdict], args.fail_on)


def cmd_run(args: argparse.Namespace) -> int:
    from kdiff.run import run
    return run(args)


def cmd_report(args: argparse.Namespace) -> int:
    from kdiff.reports.terminal import run_report
    from kdiff.store import ResultsStore
    if not args.store.is_file():
        raise UsageError(f"{args.store}: no results store there")
    with ResultsStore(args.store) as store:
        if args.list:
            for r in store.runs():
                print(f"{r.id}  {r.bench}  native {r.native_preset}  {r.device}  "
                      f"{r.n_judged}/{r.n_cases} judged  {r.command}")
            return EXIT_OK
        try:
            info, verdicts = store.load_run(args.run)
        except LookupError as exc:
            raise UsageError(str(exc)) from None
    print(run_report(verdicts, info.bench, info.native_preset, info.device))
    if len(verdicts) < info.n_cases:
        print(f"kdiff: run {info.id} is unfinished: {len(verdicts)} of {info.n_cases} kernels "
              "judged", file=sys.stderr)
    write_reports(args, verdicts, info.bench, info.native_preset, info.device)
    return exit_status(verdicts, args.fail_on)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from kdiff.calibrate import calibrate
    return calibrate(args)


def cmd_tune(args: argparse.Namespace) -> int:
    from kdiff.tune.command import tune
    for role, path in (("problem", args.problem), ("candidate", args.candidate)):
        if not path.is_file():
            raise UsageError(f"{path}: {role} file not found")
    return tune(args, make_config(args, "kernelbench"))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = {"gates": cmd_gates, "verify": cmd_verify, "run": cmd_run,
               "calibrate": cmd_calibrate, "report": cmd_report,
               "tune": cmd_tune}[args.command]
    try:
        return handler(args)
    except UsageError as exc:
        print(f"kdiff: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("kdiff: interrupted", file=sys.stderr)
        return EXIT_UNFINISHED


if __name__ == "__main__":
    sys.exit(main())
