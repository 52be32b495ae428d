"""What the twelve gates cost next to the native check, per kernel, compile excluded.

For each kernel: the worker's start (interpreter, imports, a load_inline build), the native
check twice (the first pays Triton's JIT compilation, the second is warm), then all twelve
gates in the same warm worker. Prints verifier/native per kernel and the median.

    python benchmarks/cost.py --device cuda --root .audit/kbf --runs .audit/kbf/best_agent_solutions \
        --level 1 --problems 1,19,23,40 --json cost.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from tabulate import tabulate

from kdiff.adapters.kernelbench.native import PRESETS, run_native
from kdiff.gates.base import GateContext, GateOptions
from kdiff.gates.registry import all_gates
from kdiff.judge import _fp32_means_fp32
from kdiff.plugins import manager
from kdiff.problem import load_problem
from kdiff.runconfig import RunConfig
from kdiff.sandbox import CandidateFailure, CandidateProcess, SandboxLimits


def measure(case, device: str, entry: tuple[str, ...]) -> dict:
    problem = load_problem(case.problem)
    row = {"id": case.id}
    with CandidateProcess(case.problem, case.candidate, device, entry, SandboxLimits()) as cand:
        ctx = GateContext(problem, cand, GateOptions(device=device))
        t = time.perf_counter()
        cand.request("memory")  # spawn + import (+ a load_inline build)
        row["start_s"] = time.perf_counter() - t
        for label in ("native_cold_s", "native_warm_s"):
            t = time.perf_counter()
            try:
                row["native_accept"] = run_native(ctx, PRESETS["kernelbench"]).accept
            except CandidateFailure as exc:
                row["native_accept"] = f"{exc.signature}"
            row[label] = time.perf_counter() - t
        t = time.perf_counter()
        row["gates"] = {g.id: round(g.run(ctx).seconds, 4) for g in all_gates()}
        row["gates_s"] = time.perf_counter() - t
    row["ratio"] = row["gates_s"] / max(row["native_warm_s"], 1e-9)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--root", type=Path, default=Path(".audit/kbf"))
    ap.add_argument("--runs", type=Path, default=Path(".audit/kbf/best_agent_solutions"))
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--problems", default="1,19,23,40,47,88")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    _fp32_means_fp32()
    pm = manager()
    config = RunConfig(root=args.root, runs=args.runs, level=args.level,
                       problems=args.problems.split(","))
    cases = pm.hook.kdiff_discover(bench="kernelbench", config=config)
    rows = []
    for case in cases:
        entry = tuple(pm.hook.kdiff_entry_points(bench="kernelbench", case=case) or ("ModelNew",))
        try:
            rows.append(measure(case, args.device, entry))
        except Exception as exc:  # noqa: BLE001 - one kernel must not lose the others
            rows.append({"id": case.id, "error": f"{type(exc).__name__}: {exc}"[:200]})
        print(json.dumps(rows[-1]), flush=True)
    ok = [r for r in rows if "ratio" in r]
    print(tabulate([[r["id"], f"{r['start_s']:.2f}", f"{r['native_cold_s']:.3f}",
                     f"{r['native_warm_s']:.3f}", f"{r['gates_s']:.2f}", f"{r['ratio']:.1f}x"]
                    for r in ok], headers=["kernel", "start s", "native (cold) s",
                                           "native (warm) s", "12 gates s", "gates/native"]))
    if ok:
        print(f"median gates/native (compile excluded): "
              f"{statistics.median(r['ratio'] for r in ok):.1f}x over {len(ok)} kernels")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
