"""GPU MODE's labelled solutions (reference-kernels' `solutions/correct` and `solutions/wrong`)
judged by kdiff and by GPU MODE's own check, tabulated per solution and per label.

    python benchmarks/gpumode_labelled.py [--root .audit/gpumode] [--problems 'pmpp_v2/*']
        [--device cuda] [--jobs 4] [--out out/gpumode-labelled]

runs `kdiff run --bench gpumode` on them (its results store in OUT/, so that a run cut short
resumes where it stopped when the same command runs again), then writes OUT/labelled.md (the
table) beside the run's OUT/report.json. `--report PATH` tabulates an existing JSON report of
a gpumode run instead. `--root` is a checkout of gpu-mode/reference-kernels (or its
problems/ folder).

Each row: the solution's label, the native verdict (accept, reject, or open: could not run)
with its reason, kdiff's verdict with the gates that failed. The summary counts, per label,
how many each side accepts: a `correct` solution kdiff rejects, or a `wrong` one it accepts,
is a disagreement with the label to look at.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path


def verdict_word(accept: bool | None) -> str:
    return {True: "accept", False: "reject", None: "open"}[accept]


def table(report: dict) -> str:
    kernels = sorted(report["kernels"], key=lambda k: k["id"])
    lines = [f"GPU MODE labelled solutions: native check `{report.get('native')}`, device "
             f"`{report.get('device')}`, {len(kernels)} solutions.", "",
             "| problem | solution | label | native | kdiff | failed gates | native reason |",
             "|---|---|---|---|---|---|---|"]
    counts: Counter[tuple[str, str, str]] = Counter()
    for k in kernels:
        label = (k.get("metadata") or {}).get("label", "-")
        problem, found, solution = k["id"].rpartition(f"/{label}/")
        if not found:  # a problem that could not be read: a case of its own
            problem, solution = k["id"], "-"
        native, kdiff = verdict_word(k["native_accept"]), verdict_word(k["verifier_accept"])
        failed = [f"{g} ({r.get('signature')})" for g, r in (k.get("gates") or {}).items()
                  if r["status"] == "fail"]
        reason = ((k.get("native") or {}).get("reason") or k.get("error") or "")
        reason = reason.replace("|", "/").replace("\n", " ")[:160]
        lines.append(f"| {problem} | {solution} | {label} | {native} | "
                     f"{kdiff} | {', '.join(failed) or '-'} | {reason} |")
        counts[label, native, kdiff] += 1
    lines += ["", "| label | native | kdiff | solutions |", "|---|---|---|---|"]
    lines += [f"| {label} | {n} | {v} | {c} |" for (label, n, v), c in sorted(counts.items())]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(".audit/gpumode"))
    parser.add_argument("--problems", default="pmpp_v2/*",
                        help="problem ids or globs, comma-separated (default pmpp_v2/*)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--gates", default=None, help="only these gates (default: all twelve)")
    parser.add_argument("--case-timeout", type=float, default=600)
    parser.add_argument("--out", type=Path, default=Path("out/gpumode-labelled"))
    parser.add_argument("--report", type=Path, help="tabulate this JSON report; run nothing")
    args = parser.parse_args()
    report = args.report
    if report is None:
        args.out.mkdir(parents=True, exist_ok=True)
        report = args.out / "report.json"
        command = [sys.executable, "-m", "kdiff.commands.cli", "run", "--bench", "gpumode",
                   "--root", str(args.root), "--problems", args.problems,
                   "--device", args.device, "--jobs", str(args.jobs),
                   "--case-timeout", str(args.case_timeout), "--fail-on", "never",
                   "--store", str(args.out / "store.sqlite"), "--json", str(report)]
        if args.gates:
            command += ["--gates", args.gates]
        print(" ".join(command), file=sys.stderr, flush=True)
        status = subprocess.run(command).returncode
        if status != 0 or not report.is_file():
            print(f"kdiff run exited {status}; no table", file=sys.stderr)
            return status or 1
    text = table(json.loads(report.read_text()))
    out = report.with_name("labelled.md")
    out.write_text(text)
    print(text)
    print(f"written: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
