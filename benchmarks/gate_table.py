"""One table from many `kdiff verify --json` reports of the same kernels, each report
holding some of the gates (a kernel's gates judged side by side, one judge per gate, as
benchmarks/gpu_session.sh's mamba3_gates does): a row per kernel, a column per gate, then
every gate that did not pass with its detail. A gate no report holds reads `-` (its judge
ran out of time before writing one).

    python benchmarks/gate_table.py OUT/m3_*.json [--markdown table.md]
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from tabulate import tabulate

from kdiff.data.model import GateResult
from kdiff.gates.registry import GATE_IDS


def collect(paths: list[Path]) -> dict[str, dict[str, dict]]:
    """kernel -> gate id -> that gate's entry, over every readable report, a later report's
    entry replacing an earlier one's unless it was not run (a judge out of time). A kernel is
    named by its candidate file's folder and id: two candidate sets of one problem share ids."""
    kernels: dict[str, dict[str, dict]] = defaultdict(dict)
    for path in paths:
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"{path}: unreadable ({e.__class__.__name__}), left out")
            continue
        for kernel in report["kernels"]:
            name = f"{Path(kernel['candidate']).parent.name}/{kernel['id']}"
            for gate, entry in (kernel.get("gates") or {}).items():
                if gate not in kernels[name] or not GateResult.from_json(gate, entry).not_run:
                    kernels[name][gate] = entry
    return kernels


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("reports", nargs="+", type=Path)
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args()
    kernels = collect(args.reports)
    rows = [[kid, *(gates.get(g, {}).get("status", "-") for g in GATE_IDS)]
            for kid, gates in sorted(kernels.items())]
    table = tabulate(rows, headers=["kernel", *GATE_IDS], tablefmt="github")
    notes = [f"- {kid} {g}: {entry['status']} {entry.get('signature') or ''} "
             f"{(entry.get('detail') or '')[:400]}"
             for kid, gates in sorted(kernels.items()) for g, entry in gates.items()
             if entry.get("status") != "pass"]
    text = "\n".join([table, "", *notes])
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")


if __name__ == "__main__":
    main()
