"""One Markdown row per audited run of a results store, and a pooled row: the rows of
docs/results.md's audit at scale. Each row is what `kdiff report --store S --run ID` says of
that run (the pooled row: of every run given, `kdiff report --run A --run B ...`):

    python benchmarks/audit_tables.py --store .audit/tb_cpu.sqlite --run 3fd4 --run 8a2d ...
    python benchmarks/audit_tables.py --store .audit/tb_cpu.sqlite --bench tritonbench

A run is named by the generated-output file its command read (`--generated`), else its id.
--bench takes the latest complete full-profile run of each such file in the store.
"""
from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from kdiff.differential.summary import Summary, summarize
from kdiff.verdicts.store import ResultsStore, RunInfo

HEADER = ("| run | kernels | decided | both accept | native only | verifier only | both reject "
          "| McNemar p | native-accepted rejected | native-accepted failing a tolerance-free gate "
          "| modal defect (native-accepted) |")


def option(run: RunInfo, name: str) -> str | None:
    words = shlex.split(run.command) if run.command else []
    return words[words.index(name) + 1] if name in words[:-1] else None


def label(run: RunInfo) -> str:
    generated = option(run, "--generated")
    return Path(generated).stem if generated else run.id[:8]


def row(name: str, s: Summary) -> str:
    c, d = s.confusion, s.disagreement
    modal = s.defects.modal_native_accepted or s.defects.modal
    return (f"| {name} | {s.kernels} | {c.decided} | {c.both_accept} | {c.native_only} | "
            f"{c.verifier_only} | {c.both_reject} | {d.mcnemar_p:.3g} | "
            f"{d.rejected_of_native_accepted.describe()} | "
            f"{s.defects.tolerance_free_native_accepted.describe()} | "
            f"{modal.label + f' ({modal.count})' if modal else '-'} |")


def latest_per_label(runs: list[RunInfo], bench: str) -> list[RunInfo]:
    """The latest run of the full twelve gates per file (quick runs are compared with them
    by benchmarks/quick_recall.py, not pooled), the latest complete one where there is one
    (a run interrupted early holds a few kernels)."""
    chosen: dict[str, RunInfo] = {}
    for run in sorted(runs, key=lambda r: (r.n_judged == r.n_cases, r.started_at)):
        if run.bench == bench and option(run, "--profile") in (None, "full"):
            chosen[label(run)] = run
    return sorted(chosen.values(), key=label)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True)
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--run", action="append", metavar="ID")
    which.add_argument("--bench", help="the latest run of each generated-output file")
    args = ap.parse_args(argv)
    with ResultsStore(args.store) as store:
        runs = ([store.find_run(r) for r in args.run] if args.run
                else latest_per_label(store.runs(), args.bench))
        loaded = [(run, store.load_run(run.id)[1]) for run in runs]
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    for run, verdicts in loaded:
        print(row(label(run), summarize(verdicts)))
    pooled = [v for _, verdicts in loaded for v in verdicts]
    print(row(f"**pooled, {len(loaded)} runs**", summarize(pooled)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
