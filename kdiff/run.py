"""`kdiff run`: discover a bench's cases through its adapter, judge each one, tabulate the
disagreement and write the reports.

The loop over cases is `judge_all`: cases in, verdicts out as they finish. Stores (resume)
and other executors wrap or replace it without touching discovery or reporting.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Iterable, Iterator, TextIO

import pluggy

from kdiff.cli import EXIT_UNFINISHED, UsageError, exit_status, make_config, write_reports
from kdiff.hookspecs import DiscoveryError
from kdiff.judge import judge_case, native_preset
from kdiff.model import Case, NativeVerdict, Verdict
from kdiff.plugins import UnknownBench, manager, require_bench
from kdiff.runconfig import RunConfig


def judge_one(case: Case, config: RunConfig, pm: pluggy.PluginManager, preset: str) -> Verdict:
    """`judge_case`, with kdiff's own failures turned into an error row so the run goes on."""
    try:
        return judge_case(case, config, pm, preset)
    except Exception as exc:  # noqa: BLE001 - one broken case must not end the run
        message = f"kdiff failed on this case: {type(exc).__name__}: {exc}".splitlines()[0]
        return Verdict(case, NativeVerdict(None, preset, reason=message), {}, error=message)


def judge_all(cases: Iterable[Case], config: RunConfig, pm: pluggy.PluginManager,
              preset: str) -> Iterator[Verdict]:
    """Judge each case, yielding verdicts as they finish (not necessarily in input order
    when config.jobs > 1)."""
    if config.jobs <= 1:
        for case in cases:
            yield judge_one(case, config, pm, preset)
        return
    yield from _judge_in_pool(list(cases), config, pm, preset)


# -- a process pool for --jobs N ----------------------------------------------------------
# Each case already runs its candidate in a worker process of its own; the pool runs N
# judges side by side. Forked, so that the plugin manager (third-party adapters included)
# and the config are inherited rather than pickled.
_POOL: tuple[RunConfig, pluggy.PluginManager, str] | None = None


def _pool_init(config: RunConfig, pm: pluggy.PluginManager, preset: str) -> None:
    global _POOL
    _POOL = (config, pm, preset)
    import torch
    # N judges share the machine: one intra-op thread pool each would oversubscribe it.
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // config.jobs))


def _pool_judge(case: Case) -> Verdict:
    assert _POOL is not None
    return judge_one(case, *_POOL)


def _judge_in_pool(cases: list[Case], config: RunConfig, pm: pluggy.PluginManager,
                   preset: str) -> Iterator[Verdict]:
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(config.jobs, mp_context=context, initializer=_pool_init,
                             initargs=(config, pm, preset)) as pool:
        futures = {pool.submit(_pool_judge, case): case for case in cases}
        try:
            for future in as_completed(futures):
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - a judge process died
                    case = futures[future]
                    message = f"kdiff's judge process failed: {type(exc).__name__}: {exc}"
                    yield Verdict(case, NativeVerdict(None, preset, reason=message), {},
                                  error=message)
        finally:
            for future in futures:
                future.cancel()


# -- progress -----------------------------------------------------------------------------
class Progress:
    """One line per finished kernel on stderr: count/total, elapsed seconds, the verdict."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total, self.done, self.stream = total, 0, stream or sys.stderr
        self.start = time.monotonic()

    def __call__(self, verdict: Verdict) -> None:
        from kdiff.reports.terminal import progress_line
        self.done += 1
        print(progress_line(self.done, self.total, time.monotonic() - self.start, verdict),
              file=self.stream, flush=True)


# -- the command --------------------------------------------------------------------------
def run_config(args: argparse.Namespace) -> RunConfig:
    config = make_config(args, args.bench)
    config.root, config.runs, config.generated = args.root, args.runs, args.generated
    config.level = args.level
    config.problems = ([p.strip() for p in args.problems.split(",") if p.strip()]
                       if args.problems else None)
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    config.jobs = args.jobs or 1
    config.store = args.store
    return config


def discover(config: RunConfig, pm: pluggy.PluginManager) -> list[Case]:
    for flag, path in (("--root", config.root), ("--runs", config.runs),
                       ("--generated", config.generated)):
        if path is not None and not path.exists():
            raise UsageError(f"{flag} {path}: no such file or directory")
    try:
        cases = pm.hook.kdiff_discover(bench=config.bench, config=config)
    except DiscoveryError as exc:
        raise UsageError(str(exc)) from None
    if cases is None:
        raise UsageError(f"the {config.bench} adapter does not discover cases")
    if not cases:
        raise UsageError(f"no {config.bench} cases match the selection")
    return cases


def run(args: argparse.Namespace) -> int:
    pm = manager()
    try:
        require_bench(args.bench, pm)
    except UnknownBench as exc:
        raise UsageError(exc.args[0]) from None
    config = run_config(args)
    try:
        preset = native_preset(pm, config)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    except IndexError:
        raise UsageError(f"the {config.bench} adapter declares no native check") from None
    cases = discover(config, pm)
    order = {case.id: i for i, case in enumerate(cases)}
    progress = Progress(len(cases))
    verdicts: list[Verdict] = []
    status = None
    try:
        for verdict in judge_all(cases, config, pm, preset):
            verdicts.append(verdict)
            progress(verdict)
    except KeyboardInterrupt:
        print(f"kdiff: interrupted after {len(verdicts)} of {len(cases)} kernels; "
              "reporting those", file=sys.stderr)
        status = EXIT_UNFINISHED
    verdicts.sort(key=lambda v: order.get(v.case.id, len(order)))
    from kdiff.reports.terminal import run_report
    print(run_report(verdicts, config.bench, preset, config.device))
    write_reports(args, verdicts, config.bench, preset, config.device)
    return status if status is not None else exit_status(verdicts, args.fail_on)
