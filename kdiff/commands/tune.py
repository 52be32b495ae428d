"""`kdiff tune`: the searches on one candidate's launch space, a table, and the JSON report."""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from kdiff.tune.judge import ConfigJudge
from kdiff.tune.result import TuneResult
from kdiff.tune.search import METHODS, run
from kdiff.tune.space import SpaceError, describe, read_space
from kdiff.tune.timing import ProcessTimer


def table(results: list[TuneResult], fmt: str = "simple") -> str:
    from tabulate import tabulate
    rows = []
    for r in results:
        s = r.summary()
        rows.append([s["method"], f"{s['evaluated']}/{s['budget']}",
                     describe(r.chosen.config) if r.chosen else "-",
                     s["chosen_outcome"] or "-",
                     f"{s['speedup']:.3f}x" if s["speedup"] else "-",
                     s["best_reached_at"] or "-", s["best_reached_after_s"] or "-",
                     s["best_reached_after_wall_s"] or "-",
                     len(s["fast_and_wrong"]), r.rejected_among_fastest(5)])
    # "after s": each evaluation's judging and timing summed, as if the method had measured
    # alone; "wall s": the clock since the search began (judges side by side where --judges)
    return tabulate(rows, headers=["method", "evaluated", "returns", "its verdict",
                                   "best correct speedup", "reached at", "after s",
                                   "wall s", "fast and wrong", "rejected of 5 fastest"],
                    tablefmt=fmt)


def tune(args: argparse.Namespace, config) -> int:
    from kdiff.commands.invocation import EXIT_FOUND, EXIT_OK, UsageError
    try:
        space = read_space(args.candidate)
    except SpaceError as exc:
        raise UsageError(str(exc)) from None
    methods = args.methods.split(",")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise UsageError(f"unknown methods {', '.join(unknown)}; known: {', '.join(METHODS)}")
    if args.timer == "do_bench" and config.device != "cuda":
        raise UsageError("--timer do_bench needs --device cuda (the interpreter does not time "
                         "a GPU; --timer wall for a smoke run)")
    print(f"kdiff tune: {len(space)} configurations, budget {args.budget}, default "
          f"{describe(space.default)}", file=sys.stderr)
    judges = args.judges
    with tempfile.TemporaryDirectory(prefix="kdiff-tune-") as workdir, \
            ConfigJudge(args.problem, args.candidate, space, config, Path(workdir),
                        judges) as judge:
        timer = ProcessTimer(args.problem, judge.write, config.device, args.timer,
                             args.time_dtype,
                             json.loads(args.time_sizes) if args.time_sizes else None,
                             compile_cache=Path(workdir) / "triton-cache")
        results = [run(m, space, judge, timer, args.budget, args.seed, judges=judges)
                   for m in methods]
    print(table(results))
    for r in results:
        if r.default_time is None:
            print(f"{r.method}: the default configuration could not be timed: no speedup is "
                  "measured and GRPO's rewards are all the penalty", file=sys.stderr)
        for e in r.evaluations:
            if e.time_error:
                print(f"{r.method}: not timed: {describe(e.config)}: {e.time_error}",
                      file=sys.stderr)
        for e in r.fast_and_wrong():
            print(f"{r.method}: fast and wrong: {describe(e.config)} {e.time:.3g} s "
                  f"({', '.join(e.judgement.failing)})")
    if args.json:
        args.json.write_text(json.dumps({"space": {k.name: list(k.choices) for k in space.knobs},
                                         "results": [r.to_json() for r in results]}, indent=1))
    return EXIT_OK if all(r.best_correct for r in results if r.method != "autotuner") \
        else EXIT_FOUND
