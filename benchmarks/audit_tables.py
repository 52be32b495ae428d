"""One Markdown row per audited run of a results store, and a pooled row: the rows of
docs/results.md's audit at scale. Each row is what `kdiff report --store S --run ID` says of
that run (the pooled row: of every run given, `kdiff report --run A --run B ...`):

    python benchmarks/audit_tables.py --store .audit/tb_cpu.sqlite --run 3fd4 --run 8a2d ...
    python benchmarks/audit_tables.py --store .audit/tb_cpu.sqlite --bench tritonbench

A run is named by the generated-output file its command read (`--generated`), else its id.
--bench takes the latest complete full-profile run of each such file in the store, and where
the store holds a quick-profile run of the file too, the quick profile's recall against it
(benchmarks/quick_recall.py; pooled over the files that have both).
"""
from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from quick_recall import Recall  # beside this script

from kdiff.data.model import Verdict
from kdiff.differential.summary import Summary, summarize
from kdiff.verdicts.store import ResultsStore, RunInfo

HEADER = ("| run | kernels | decided | both accept | native only | verifier only | both reject "
          "| McNemar p | native-accepted rejected | native-accepted failing a tolerance-free gate "
          "| modal defect (native-accepted) | quick profile's recall |")


def option(run: RunInfo, name: str) -> str | None:
    words = shlex.split(run.command) if run.command else []
    return words[words.index(name) + 1] if name in words[:-1] else None


def label(run: RunInfo) -> str:
    generated = option(run, "--generated")
    return Path(generated).stem if generated else run.id[:8]


def row(name: str, s: Summary, recall: Recall | None) -> str:
    c, d = s.confusion, s.disagreement
    modal = s.defects.modal_native_accepted or s.defects.modal
    return (f"| {name} | {s.kernels} | {c.decided} | {c.both_accept} | {c.native_only} | "
            f"{c.verifier_only} | {c.both_reject} | {d.mcnemar_p:.3g} | "
            f"{d.rejected_of_native_accepted.describe()} | "
            f"{s.defects.tolerance_free_native_accepted.describe()} | "
            f"{modal.label + f' ({modal.count})' if modal else '-'} | "
            f"{recall.describe() if recall else '-'} |")


def latest_per_label(runs: list[RunInfo], bench: str, profile: str = "full"
                     ) -> dict[str, RunInfo]:
    """The latest run of a profile per file, the latest complete one where there is one
    (a run interrupted early holds a few kernels)."""
    chosen: dict[str, RunInfo] = {}
    for run in sorted(runs, key=lambda r: (r.n_judged == r.n_cases, r.started_at)):
        if run.bench == bench and (option(run, "--profile") or "full") == profile:
            chosen[label(run)] = run
    return dict(sorted(chosen.items()))


def accepts(verdicts: list[Verdict]) -> dict[str, bool | None]:
    return {v.case.id: v.verifier_accept for v in verdicts}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True)
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--run", action="append", metavar="ID")
    which.add_argument("--bench", help="the latest run of each generated-output file")
    args = ap.parse_args(argv)
    with ResultsStore(args.store) as store:
        if args.run:
            runs, quick_runs = {r: store.find_run(r) for r in args.run}, {}
        else:
            runs = latest_per_label(store.runs(), args.bench)
            quick_runs = latest_per_label(store.runs(), args.bench, "quick")
        loaded = [(label(run), store.load_run(run.id)[1]) for run in runs.values()]
        quick = {name: accepts(store.load_run(run.id)[1]) for name, run in quick_runs.items()}
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    recalls = {name: Recall.of(accepts(verdicts), quick[name])
               for name, verdicts in loaded if name in quick}
    for name, verdicts in loaded:
        print(row(name, summarize(verdicts), recalls.get(name)))
    pooled = [v for _, verdicts in loaded for v in verdicts]
    print(row(f"**pooled, {len(loaded)} runs**", summarize(pooled),
              Recall.pooled(list(recalls.values())) if recalls else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
