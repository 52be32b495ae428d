"""`kdiff`: the command line.

Exit statuses: 0 nothing selected by --fail-on was found; 1 something was (an undecided
kernel is a violation unless --undecided-ok); 2 bad usage or unreadable input; 3 the run
could not finish.

Nothing heavy is imported at module level: --help, `kdiff gates` and usage errors answer
without torch (tests/test_cli_fast.py holds them to it).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence

from kdiff.commands.invocation import (
    EXIT_OK,
    EXIT_UNFINISHED,
    EXIT_USAGE,
    EXPLAINED_WITHOUT_VERBOSE,
    ReportOptions,
    UsageError,
    exit_status,
    gate_ids,
    make_config,
    open_store,
    preset_text,
    write_reports,
)

if TYPE_CHECKING:
    from kdiff.data.model import Case, Verdict
    from kdiff.judging.runconfig import RunConfig
    from kdiff.verdicts.judge import GateCallback


class Parser(argparse.ArgumentParser):
    """argparse, with its errors as UsageError: one line, exit status 2, whatever the
    subcommand (argparse itself prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


# The defaults the command line states in its help (and passes on), matching
# kdiff.sandbox.process.SandboxLimits' (tests/test_cli_fast.py holds them equal); the CLI does not
# import the sandbox to read them, since that imports torch.
CALL_TIMEOUT_S = 120.0
CASE_TIMEOUT_S = 3600.0


def _checked(kind: type, ok: Callable[[Any], bool], requirement: str) -> Callable[[str], Any]:
    """An argparse type: `kind(text)`, refused unless `ok`."""
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(requirement)
        return value
    parse.__name__ = kind.__name__
    return parse


POSITIVE_INT = _checked(int, lambda n: n >= 1, "must be at least 1")
NONNEGATIVE_INT = _checked(int, lambda n: n >= 0, "must be at least 0")
POSITIVE_SECONDS = _checked(float, lambda s: s > 0, "must be above 0")


def _fail_on(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fail-on", choices=["violation", "disagreement", "provenance", "never"],
                   default="violation",
                   help="what makes the exit status 1: violation, a kernel the verifier "
                   "rejects or leaves undecided (n/a); disagreement, a kernel on which the "
                   "native check and the verifier differ; provenance, a kernel not seen "
                   "running a kernel of its own (library-only, reference-call, or no "
                   "readable record); never (default: %(default)s)")
    p.add_argument("--require-own-kernel", action="store_true",
                   help="a kernel not seen running a kernel of its own (provenance "
                   "library-only or reference-call) fails: a violation for --fail-on "
                   "violation, a <failure> in JUnit; the verifier's verdict is unchanged "
                   "(default: provenance is reported only)")
    p.add_argument("--undecided-ok", action="store_true",
                   help="with --fail-on violation, an undecided kernel (n/a: kdiff could not "
                   "judge one of its gates, or its problem is broken) does not count "
                   "(default: it does)")


def _reports(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="PATH", type=Path,
                   help="write the JSON report (strict JSON: non-finite numbers as the "
                   "strings \"inf\", \"-inf\", \"nan\") (default: none)")
    p.add_argument("--markdown", metavar="PATH", type=Path,
                   help="write a Markdown report (default: none)")
    p.add_argument("--junit", metavar="PATH", type=Path, help="write JUnit XML (default: none)")


def _verbose(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="store_true",
                   help="explain every gate in full, passes included, and every failing "
                   f"kernel of a run (default: failures only, the first "
                   f"{EXPLAINED_WITHOUT_VERBOSE} kernels of a run)")


def _common(p: argparse.ArgumentParser, native_default: str,
            device_default: str = "cuda when available, else cpu") -> None:
    p.add_argument("--native", metavar="PRESET",
                   help="the benchmark's own check to re-run, and its tolerance (default: "
                   f"{native_default}); the preset in use is printed with its tolerance")
    p.add_argument("--gates", metavar="ID,...",
                   help="run only these gates, e.g. EXC-01,PRC-01 (default: all twelve; "
                   "`kdiff gates` lists them)")
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help=f"where candidates run (default: {device_default})")
    p.add_argument("--profile", choices=["full", "quick"], default="full",
                   help="full: the twelve gates, the verdict; quick: the cheap screen, the "
                   "tolerance-free gates and CMP-03 at a few held-out shapes and the "
                   "benchmark's own variants (default: full)")
    p.add_argument("-x", "--exitfirst", action="store_true",
                   help="stop judging a kernel at its first failing gate (the others are "
                   "reported as not run)")
    _reports(p)
    _fail_on(p)
    _verbose(p)
    p.add_argument("--call-timeout", type=POSITIVE_SECONDS, default=CALL_TIMEOUT_S,
                   metavar="S", help="seconds one call of the candidate may take "
                   "(default: %(default)g)")
    p.add_argument("--case-timeout", type=POSITIVE_SECONDS, default=CASE_TIMEOUT_S,
                   metavar="S", help="wall budget of one kernel, all its gates together, "
                   "less its waits for other judges' calls (default: %(default)g)")
    p.add_argument("--dtypes", default=None, metavar="D,...",
                   help="working dtypes for PRC-01 (default: the problem's KDIFF_DTYPES or "
                   "float32)")
    p.add_argument("--chosen-seed", type=NONNEGATIVE_INT, default=None, metavar="N",
                   help="draw the trials chosen per verdict from seed N (below 2^64), the one "
                   "a failure's trial label names, to reproduce it; each chosen draw's seed is "
                   "a keyed hash of N; a seed known beforehand is one a candidate can prepare "
                   "for (default: KDIFF_CHOSEN_SEED if set, else a new secret seed per kernel)")
    p.add_argument("--max-elements", type=POSITIVE_INT, default=None, metavar="N",
                   help="judge a problem with an input or a reference output of more than N "
                   "elements at smaller sizes of the same problem, native check included "
                   "(upstream KernelBench inputs reach 4e9 elements); the report lists the "
                   "sizes judged at (default: the benchmark's own sizes)")


# The kernelbench adapter's default presets (kdiff_default_preset), as the help states them.
SHIPPED_PRESET = "kernelbench-v0.1 (allclose atol=rtol=1e-2)"
CHECKOUT_PRESET = "kernelbench (allclose atol=rtol=1e-4 in fp32)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="kdiff", description=__doc__.splitlines()[0],
                    epilog="Exit status: 0 nothing selected by --fail-on was found; 1 "
                    "something was (undecided kernels count as violations unless "
                    "--undecided-ok); 2 bad usage or unreadable input; 3 the run could not "
                    "finish.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser("gates", help="list the twelve gates")
    g.add_argument("--json", action="store_true", help="print JSON (default: a table)")
    g.add_argument("-v", "--verbose", action="store_true",
                   help="also list every signature a verdict can carry, with its meaning, "
                   "and the words the failure explanations use")

    v = sub.add_parser("verify", help="judge one candidate against one problem")
    v.add_argument("--bench", default="kernelbench", metavar="NAME",
                   help="whose layout the two paths are in (default: kernelbench, two files)")
    v.add_argument("--problem", required=True, type=Path, metavar="REF",
                   help="the reference problem (kernelbench: a file with Model, get_inputs, "
                   "get_init_inputs; gpumode, solexecbench: the problem's folder)")
    v.add_argument("--candidate", required=True, type=Path, metavar="NEW",
                   help="the candidate kernel (kernelbench: a file with ModelNew; gpumode: a "
                   "submission; solexecbench: a solution json)")
    _common(v, SHIPPED_PRESET)

    r = sub.add_parser("run", help="judge a benchmark's kernels and tabulate the disagreement")
    r.add_argument("--bench", required=True,
                   help="the benchmark adapter, e.g. kernelbench or tritonbench")
    r.add_argument("--root", type=Path, metavar="DIR",
                   help="the benchmark checkout (default: the shipped corpus)")
    r.add_argument("--runs", type=Path, metavar="DIR",
                   help="a runs folder of generated kernels (default: every run under the "
                   "root's runs/)")
    r.add_argument("--generated", type=Path, metavar="FILE",
                   help="generated outputs, jsonl (tritonbench) (default: none)")
    r.add_argument("--level", type=POSITIVE_INT, metavar="L",
                   help="only this KernelBench level (default: every level)")
    r.add_argument("--problems", metavar="ID,...",
                   help="problem ids or globs, comma-separated (default: every problem)")
    r.add_argument("--jobs", type=POSITIVE_INT, default=None, metavar="N",
                   help="judges at once (default: one per GPU on cuda, one per core as memory "
                   "allows on cpu)")
    r.add_argument("--store", type=Path, metavar="PATH",
                   help="results store (SQLite; default: kdiff-store.sqlite beside the "
                   "reports, or in ./kdiff-out)")
    r.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local processes, or a Ray cluster (RAY_ADDRESS, else a local one) "
                   "(default: %(default)s)")
    _common(r, f"{SHIPPED_PRESET} for the shipped corpus, {CHECKOUT_PRESET} for a --root "
            "checkout", "cpu for the shipped corpus, which is sized for it; for a --root "
            "checkout cuda when available, else cpu")

    rp = sub.add_parser("report", help="render a run's reports from a results store alone")
    rp.add_argument("--store", required=True, type=Path, help="the results store (SQLite)")
    rp.add_argument("--run", metavar="ID", action="append",
                    help="which run (default: the latest; a prefix of an id will do); given "
                    "more than once, the runs' kernels pooled in one report (an audit over "
                    "several models' files), which must share bench and native check")
    rp.add_argument("--list", action="store_true", help="list the runs in the store")
    _reports(rp)
    _fail_on(rp)
    _verbose(rp)

    t = sub.add_parser("tune", help="tune a candidate's launch settings, every configuration "
                       "judged by the gates before it may win (docs/tune.md)")
    t.add_argument("--problem", required=True, type=Path, metavar="REF.py",
                   help="the problem the configurations are judged on (KernelBench format)")
    t.add_argument("--candidate", required=True, type=Path, metavar="NEW.py",
                   help="the kernel; declares KDIFF_TUNE_SPACE and KDIFF_TUNE_CONFIG")
    t.add_argument("--budget", type=POSITIVE_INT, default=32, metavar="N",
                   help="new configurations per method (default: %(default)s)")
    t.add_argument("--methods", default="grpo,random,exhaustive,autotuner",
                   help="search methods, comma-separated (default: %(default)s)")
    t.add_argument("--seed", type=int, default=0, help="the search's seed (default: 0)")
    t.add_argument("--timer", choices=["do_bench", "wall"], default="do_bench",
                   help="Triton's do_bench (CUDA) or wall-clock (a CPU smoke run) "
                   "(default: %(default)s)")
    t.add_argument("--time-dtype", default=None, metavar="DTYPE",
                   help="cast the timed inputs, e.g. bfloat16 (default: the problem's)")
    t.add_argument("--time-sizes", default=None, metavar="JSON",
                   help='problem sizes to time at, e.g. \'{"seq_len": 8192}\' (default: the '
                   "problem's)")
    t.add_argument("--judges", type=POSITIVE_INT, default=1, metavar="N",
                   help="configurations judged at once, each in a judge process of its own, "
                   "while the timer compiles them; measured one at a time after "
                   "(default: %(default)s)")
    _common(t, SHIPPED_PRESET)

    c = sub.add_parser("calibrate", help="honest noise against defective error, per gate")
    c.add_argument("--json", type=Path, metavar="PATH",
                   help="write the calibration as strict JSON (default: none)")
    c.add_argument("--plot", type=Path, metavar="PATH",
                   help="write a PNG of each thresholded gate's honest and defective errors "
                   "against its bound (needs matplotlib) (default: none)")
    c.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="where the corpus runs (default: cuda when available, else cpu)")
    c.add_argument("--jobs", type=POSITIVE_INT, default=None, metavar="N",
                   help="judges at once (default: one per GPU, or per core); several may "
                   "share one GPU")

    rc = sub.add_parser("records", help="move an audit between machines: a store's verdicts "
                        "as a compressed records file, and back (docs/large-runs.md)")
    actions = rc.add_subparsers(dest="action", required=True, metavar="ACTION")
    ex = actions.add_parser("export", help="write a store's runs and verdicts (never "
                            "third-party code) to a .jsonl.gz records file")
    ex.add_argument("--store", required=True, type=Path, help="the results store (SQLite)")
    ex.add_argument("--out", required=True, type=Path, metavar="PATH",
                    help="the records file to write, ending in .jsonl.gz")
    ex.add_argument("--run", metavar="ID", help="only this run and its verdicts (default: "
                    "every run and verdict in the store; a prefix of an id will do)")
    im = actions.add_parser("import", help="add records files' runs and verdicts to a store; "
                            "what the store holds already is kept")
    im.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                    help="records files (.jsonl.gz)")
    im.add_argument("--store", required=True, type=Path,
                    help="the results store to add to (SQLite; created if missing)")
    return parser


def cmd_gates(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from kdiff.gates.registry import GATES, SIGNATURES, TERMS
    if args.json:
        out = [{"id": g.id, "name": g.name, "class": g.klass.value, "checks": g.summary}
               for g in GATES]
        if args.verbose:
            out = {"gates": out, "signatures": [{"signature": s.name, "gates": list(s.gates),
                                                 "meaning": s.meaning}
                                                for s in SIGNATURES.values()],
                   "terms": TERMS}
        print(json.dumps(out))
        return EXIT_OK
    print(tabulate([[g.id, g.name, g.klass.value, g.summary] for g in GATES],
                   headers=["id", "name", "class", "checks"], maxcolwidths=[None, None, None, 60]))
    if args.verbose:
        print("\nsignatures (why a gate failed):")
        print(tabulate([[s.name, ",".join(s.gates), s.meaning] for s in SIGNATURES.values()],
                       headers=["signature", "gates", "meaning"], maxcolwidths=[None, None, 70]))
        print("\nwords of the failure explanations:")
        print(tabulate(list(TERMS.items()), headers=["term", "meaning"],
                       maxcolwidths=[None, 80]))
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    for role, path in (("problem", args.problem), ("candidate", args.candidate)):
        if not path.exists():
            raise UsageError(f"{path}: {role} file not found")
    gate_ids(args)  # an unknown gate is bad usage before anything heavy loads
    from kdiff.data.model import Case
    from kdiff.gates.registry import entry, select
    from kdiff.judging.plugins import UnknownBench, manager, require_bench
    from kdiff.reports.progress import Heartbeat, duration
    from kdiff.reports.terminal import explanations, verdict_table
    from kdiff.verdicts.judge import JudgingInterrupted, judge_case, native_preset
    config = make_config(args, args.bench)
    pm = manager()
    try:
        require_bench(config.bench, pm)
        preset = native_preset(pm, config)
    except (KeyError, UnknownBench) as exc:
        raise UsageError(str(exc.args[0])) from None
    case = pm.hook.kdiff_case_from_paths(bench=config.bench, problem=args.problem,
                                         candidate=args.candidate) or Case(
        id=f"{args.problem.stem}::{args.candidate.stem}", problem=args.problem,
        candidate=args.candidate, bench=config.bench)
    unfinished = False
    started = time.monotonic()
    total = len(select(config.gates))
    print(f"kdiff verify: native check {preset_text(pm, config.bench, preset)}; device "
          f"{config.device}; {total} gate(s)", file=sys.stderr, flush=True)

    judging = JudgingNow("the native check", started)

    def on_start(what: str) -> None:
        judging.what, judging.since = what, time.monotonic()

    def still_judging() -> None:  # a gate can take minutes on a device: say so meanwhile
        now = time.monotonic()
        print(f"[{judging.judged:2d}/{total} {now - started:7.1f}s] judging {judging.what}, "
              f"{duration(now - judging.since)} so far", file=sys.stderr, flush=True)

    heartbeat = Heartbeat(still_judging)

    def after_gate(so_far, result, judged: int) -> None:
        # a gate's line as it lands, and the reports rewritten with the gates judged so far:
        # a verify killed outright (a device budget's SIGKILL) keeps all but the gate it was in
        judging.judged = judged
        print(f"[{judged:2d}/{total} {time.monotonic() - started:7.1f}s] {result.gate} "
              f"{result.status.value}" + (f" {result.signature}" if result.signature else ""),
              file=sys.stderr, flush=True)
        heartbeat.spoke()
        write_reports(report_options(args), [so_far], config.bench, preset, config.device)

    try:
        verdict = judge_case(case, config, pm, preset, on_gate=after_gate, on_start=on_start)
        if verdict.resumable:
            on_start("the gates left, in a fresh judge")
            verdict = go_on_in_fresh_judges(case, verdict, config, preset, after_gate)
    except JudgingInterrupted as stop:  # report the gates judged so far (a device's budget)
        verdict, unfinished = stop.verdict, True
        print(f"kdiff: interrupted after {stop.judged} of {len(verdict.gates)} gates; "
              "reporting those", file=sys.stderr)
    finally:
        heartbeat.close()
    if verdict.error and verdict.error_kind != "candidate":
        raise UsageError(verdict.error)  # the problem does not load: bad input, no verdict
    print(verdict_table(verdict, {gid: entry(gid).name for gid in verdict.gates}))
    explained = explanations(verdict, args.verbose)
    if explained:
        print("\n" + explained)
    write_reports(report_options(args), [verdict], config.bench, preset, config.device)
    if unfinished:
        return EXIT_UNFINISHED
    return exit_status([verdict], args.fail_on, args.undecided_ok, args.require_own_kernel)


@dataclasses.dataclass
class JudgingNow:
    """What `kdiff verify` is judging (the native check, a gate) and since when: its
    heartbeat line's words."""

    what: str
    since: float
    judged: int = 0


def go_on_in_fresh_judges(case: Case, verdict: Verdict, config: RunConfig, preset: str,
                          after_gate: GateCallback) -> Verdict:
    """A resumable verdict (the reference broke this process's CUDA context on one gate's
    inputs) judged on by fresh judge processes, each new gate shown as it is reported."""
    from kdiff.verdicts.fresh_judges import judged_on
    from kdiff.verdicts.judge import JudgingInterrupted, decided, judge_case
    print(f"kdiff: {verdict.error}; a fresh judge goes on from there", file=sys.stderr,
          flush=True)
    before = decided(verdict)
    try:
        verdict = judged_on(case, verdict, judge_case, config, preset)
    except KeyboardInterrupt:  # the gates judged so far, the others open: not the judge's error
        raise JudgingInterrupted(dataclasses.replace(verdict, error=None, resumable=False),
                                 len(before)) from None
    for result in decided(verdict).values():
        if result.gate not in before:
            before[result.gate] = result
            after_gate(verdict, result, len(before))
    return verdict


def report_options(args: argparse.Namespace) -> ReportOptions:
    return ReportOptions(args.json, args.markdown, args.junit,
                       getattr(args, "require_own_kernel", False))


def run_config(args: argparse.Namespace) -> RunConfig:
    from kdiff.commands.executor import default_jobs
    from kdiff.verdicts.store import default_path
    if args.root is None and args.device is None:
        args.device = "cpu"  # the shipped corpus is sized for the CPU
    config = make_config(args, args.bench)
    config.root, config.runs, config.generated = args.root, args.runs, args.generated
    config.level = args.level
    config.problems = ([p.strip() for p in args.problems.split(",") if p.strip()]
                       if args.problems else None)
    config.jobs = args.jobs or default_jobs(config.device)
    config.store = args.store or default_path(args.json, args.markdown, args.junit)
    return config


def cmd_run(args: argparse.Namespace) -> int:
    # bad usage is told before anything heavy loads
    for flag, path in (("--root", args.root), ("--runs", args.runs),
                       ("--generated", args.generated)):
        if path is not None and not path.exists():
            raise UsageError(f"{flag} {path}: no such file or directory")
    gate_ids(args)
    from kdiff.commands.run import RunOptions, run
    from kdiff.judging.plugins import UnknownBench, require_bench
    try:
        require_bench(args.bench)
    except UnknownBench as exc:
        raise UsageError(exc.args[0]) from None
    options = RunOptions(report_options(args), args.fail_on, args.undecided_ok, args.verbose,
                         args.executor, " ".join(sys.argv), args.require_own_kernel)
    return run(run_config(args), options)


def cmd_report(args: argparse.Namespace) -> int:
    from kdiff.reports.terminal import explain_run, run_report
    from kdiff.verdicts.store import UnreadableStore
    if not args.store.is_file():
        raise UsageError(f"{args.store}: no results store there")
    with open_store(args.store) as store:
        try:
            if args.list:
                for r in store.runs():
                    print(f"{r.id}  {r.bench}  native {r.native_preset}  {r.device}  "
                          f"{r.n_judged}/{r.n_cases} judged  {r.command}")
                return EXIT_OK
            loaded = [store.load_run(run) for run in (args.run or [None])]
        except (LookupError, UnreadableStore) as exc:
            raise UsageError(str(exc)) from None
    info = loaded[0][0]
    for other, _ in loaded[1:]:
        if (other.bench, other.native_preset) != (info.bench, info.native_preset):
            raise UsageError(f"run {other.id} ({other.bench}, native {other.native_preset}) "
                             f"cannot be pooled with run {info.id} ({info.bench}, native "
                             f"{info.native_preset})")
    verdicts = [v for _, run_verdicts in loaded for v in run_verdicts]
    print(run_report(verdicts, info.bench, info.native_preset, info.device))
    explained = explain_run(verdicts, args.verbose, EXPLAINED_WITHOUT_VERBOSE)
    if explained:
        print("\n" + explained)
    for run, run_verdicts in loaded:
        if len(run_verdicts) < run.n_cases:
            print(f"kdiff: run {run.id} is unfinished: {len(run_verdicts)} of {run.n_cases} "
                  "kernels judged", file=sys.stderr)
    write_reports(report_options(args), verdicts, info.bench, info.native_preset, info.device)
    return exit_status(verdicts, args.fail_on, args.undecided_ok, args.require_own_kernel)


def cmd_records(args: argparse.Namespace) -> int:
    from kdiff.commands.records import export_records, import_records
    return {"export": export_records, "import": import_records}[args.action](args)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from kdiff.commands.calibrate import calibrate
    return calibrate(args.device, args.jobs, args.json, args.plot)


def cmd_tune(args: argparse.Namespace) -> int:
    from kdiff.commands.tune import tune
    for role, path in (("problem", args.problem), ("candidate", args.candidate)):
        if not path.is_file():
            raise UsageError(f"{path}: {role} file not found")
    return tune(args, make_config(args, "kernelbench"))


CHOSEN_SEED_OPTION = "--chosen-seed"


def names_chosen_seed(arg: str) -> bool:
    """Whether `arg` is --chosen-seed, as argparse takes it: abbreviated, with its value after
    "=" or not."""
    name = arg.split("=", 1)[0]
    return len(name) > len("--c") and CHOSEN_SEED_OPTION.startswith(name)


def without_chosen_seed(args: list[str]) -> list[str]:
    """`args` with --chosen-seed and its value left out."""
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif names_chosen_seed(arg):
            skip = "=" not in arg
        else:
            kept.append(arg)
    return kept


def withhold_chosen_seed() -> None:
    """This process's command line, which any process reads in /proc (a candidate's worker:
    tests/hostile/reads_the_judges_command_line.py), without --chosen-seed, the verdict's
    secret (its environment and memory, KDIFF_CHOSEN_SEED's too, are closed to workers before
    the first starts: kdiff.sandbox.process.judge_folder)."""
    from kdiff.sandbox.visibility import rewrite_command_line

    with open("/proc/self/cmdline", "rb") as f:
        own = f.read().decode("utf-8", "surrogateescape").split("\0")
    if any(map(names_chosen_seed, own)):
        rewrite_command_line(without_chosen_seed(own))


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        withhold_chosen_seed()
        handler = {"gates": cmd_gates, "verify": cmd_verify, "run": cmd_run,
                   "calibrate": cmd_calibrate, "report": cmd_report, "records": cmd_records,
                   "tune": cmd_tune}[args.command]
        return handler(args)
    except UsageError as exc:
        print(f"kdiff: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("kdiff: interrupted", file=sys.stderr)
        return EXIT_UNFINISHED
    except BrokenPipeError:
        # The reader left (`kdiff gates | head`): say nothing more, and let the interpreter's
        # final flush of stdout go to /dev/null instead of raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
