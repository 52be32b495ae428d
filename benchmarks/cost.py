"""What a verdict costs next to the native check, per kernel, compile excluded.

For each kernel: the worker's start (interpreter, imports, a load_inline build), the native
check twice (the first pays Triton's JIT compilation, the second is warm), then the gates of
the profile (--profile full: all twelve; quick: the tolerance-free gates and CMP-03 at a few
shapes) in the same warm worker, in the judge's order (JUDGING_ORDER), calls shared between
gates as in a run, and the oracle cache as the run leaves it (a problem's second candidate
reads its first one's evaluations: the figure an RL loop or an audit of many runs sees;
`evaluations` counts those computed). Prints verifier/native per kernel and the median, and splits
the ratio into its two factors: how many candidate calls the gates make against the native
check's, and what one call costs in each (round trips to the worker, plus the judge's own
work: drawing inputs, the float64 oracle, the bounds).

    python benchmarks/cost.py --device cuda --root .audit/kbf --runs .audit/kbf/best_agent_solutions \
        --level 1 --problems 19,23,40 --json cost.json      # CUDA (load_inline) candidates
    python benchmarks/cost.py --device cuda --root .audit/kbf --runs kernels/runs/controls \
        --level 1 --problems 19,36,38 --json cost_triton.json  # the corpus's Triton controls
    python benchmarks/cost.py --device cpu --root kernels --runs kernels/runs/controls \
        --problems 19,2,36 --json cost_cpu.json                 # the shipped corpus, CPU
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import time
from pathlib import Path

import torch
from tabulate import tabulate

from kdiff.adapters.kernelbench.native import PRESETS, run_native
from kdiff.commands.executor import JUDGES_FIRST_IMPORTS
from kdiff.data.model import Profile
from kdiff.data.problem import load_problem
from kdiff.gates.registry import QUICK_GATES, in_judging_order, select
from kdiff.judging.context import GateContext, GateOptions
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.numerics.oracle import run_oracle
from kdiff.sandbox.process import CandidateFailure, CandidateProcess, SandboxLimits
from kdiff.sandbox.runnable import process_group
from kdiff.verdicts.judge import as_a_judge


def group_cpu_seconds(group: int | None) -> float:
    """User and system CPU seconds of the live processes of process group `group` (a worker
    and what it started): CPU time, which the machine's other load does not enter."""
    if group is None:
        return 0.0
    ticks = 0
    for pid in process_group(group):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended since the listing
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


class Requests:
    """The candidate's round trips since the last `take`: calls of the kernel under test (a
    gate's `call`; the native check's one `native` request runs all its trials), the seconds
    of all round trips, and the CPU seconds of the judge (this process) and of the worker."""

    def __init__(self, cand: CandidateProcess) -> None:
        self.cand, self.last = cand, (0, 0.0, 0.0, 0.0)

    def take(self) -> tuple[int, float, float, float]:
        now = (self.cand.request_counts["call"]
               + self.cand.request_counts["native"] * PRESETS["kernelbench"].trials,
               sum(self.cand.request_seconds.values()), time.process_time(),
               group_cpu_seconds(self.cand.pid))
        taken = tuple(b - a for a, b in zip(self.last, now))
        self.last = now
        return taken  # type: ignore[return-value]


def warm_judge(device: str) -> None:
    """The judge's one-time costs, paid before the first kernel is timed, as a `kdiff run`
    pays them once for all its kernels: its first imports (JUDGES_FIRST_IMPORTS: the oracle's
    dispatch mode no longer imports torch._dynamo, but a meta-device draw of CMP-03's still
    does, which charged 1.4 CPU s to the first kernel's CMP-03), and the device's first
    float64 kernels load."""
    for name in JUDGES_FIRST_IMPORTS:
        importlib.import_module(name)
    x = torch.ones(4, dtype=torch.float64, device=device)
    run_oracle(torch.nn.ReLU(), [x], [torch.ones_like(x)])


def measure(case, device: str, entry: tuple[str, ...], profile: Profile) -> dict:
    problem = load_problem(case.problem)
    row = {"id": case.id}
    gates = in_judging_order(select(list(QUICK_GATES) if profile is Profile.QUICK else None))
    with CandidateProcess(case.problem, case.candidate, device, entry, SandboxLimits()) as cand:
        ctx = GateContext(problem, cand, GateOptions(device=device, profile=profile))
        requests = Requests(cand)
        t = time.perf_counter()
        cand.request("memory")  # spawn + import (+ a load_inline build)
        row["start_s"] = time.perf_counter() - t
        for label in ("native_cold", "native_warm"):
            requests.take()
            t = time.perf_counter()
            try:
                row["native_accept"] = run_native(ctx, PRESETS["kernelbench"]).accept
            except CandidateFailure as exc:
                row["native_accept"] = f"{exc.signature}"
            row[f"{label}_s"] = time.perf_counter() - t
            (row[f"{label}_calls"], row[f"{label}_worker_s"], row[f"{label}_judge_cpu_s"],
             row[f"{label}_worker_cpu_s"]) = requests.take()
        row["gates"] = {}
        before = ctx.evaluations_computed
        for gate in gates:
            t = time.perf_counter()
            status = gate.run(ctx).status.value
            calls, worker_s, judge_cpu_s, worker_cpu_s = requests.take()
            row["gates"][gate.id] = {"s": round(time.perf_counter() - t, 4), "calls": calls,
                                     "worker_s": round(worker_s, 4), "status": status,
                                     "judge_cpu_s": round(judge_cpu_s, 3),
                                     "worker_cpu_s": round(worker_cpu_s, 3)}
        row["calls_served"] = ctx.calls_served
        row["evaluations"] = ctx.evaluations_computed - before
    gates = row["gates"].values()
    row["gates_s"] = sum(g["s"] for g in gates)
    row["gates_calls"] = sum(g["calls"] for g in gates)
    row["gates_worker_s"] = sum(g["worker_s"] for g in gates)
    row["gates_cpu_s"] = sum(g["judge_cpu_s"] + g["worker_cpu_s"] for g in gates)
    row["ratio"] = row["gates_s"] / max(row["native_warm_s"], 1e-9)
    row["calls_ratio"] = row["gates_calls"] / max(row["native_warm_calls"], 1)
    row["per_call_ratio"] = row["ratio"] / max(row["calls_ratio"], 1e-9)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--root", type=Path, default=Path(".audit/kbf"))
    ap.add_argument("--runs", type=Path, default=Path(".audit/kbf/best_agent_solutions"))
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--problems", default="1,19,23,40,47,88")
    ap.add_argument("--profile", choices=[p.value for p in Profile], default="full")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    as_a_judge()  # as judge_case sets up a judge's process
    warm_judge(args.device)
    pm = manager()
    config = RunConfig(root=args.root, runs=args.runs, level=args.level,
                       problems=args.problems.split(","))
    cases = pm.hook.kdiff_discover(bench="kernelbench", config=config)
    rows = []
    try:
        for case in cases:
            entry = tuple(pm.hook.kdiff_entry_points(bench="kernelbench", case=case)
                          or ("ModelNew",))
            try:
                rows.append(measure(case, args.device, entry, Profile(args.profile)))
            except Exception as exc:  # noqa: BLE001 - one kernel must not lose the others
                rows.append({"id": case.id, "error": f"{type(exc).__name__}: {exc}"[:200]})
            print(json.dumps(rows[-1]), flush=True)
    except KeyboardInterrupt:  # a budget's SIGINT: tabulate the kernels measured so far
        print(f"interrupted after {len(rows)} of {len(cases)} kernels", flush=True)
    ok = [r for r in rows if "ratio" in r]
    print(tabulate([[r["id"], f"{r['start_s']:.2f}", f"{r['native_cold_s']:.3f}",
                     f"{r['native_warm_s']:.3f} ({r['native_warm_calls']})",
                     f"{r['gates_s']:.2f} ({r['gates_calls']}, {r['calls_served']})",
                     str(r["evaluations"]),
                     f"{r['gates_worker_s'] / max(r['gates_s'], 1e-9):.0%}",
                     f"{r['gates_cpu_s']:.2f}",
                     f"{r['ratio']:.1f}x", f"{r['calls_ratio']:.1f}x", f"{r['per_call_ratio']:.2f}x"]
                    for r in ok],
                   headers=["kernel", "start s", "native (cold) s", "native (warm) s (calls)",
                            f"{args.profile} gates s (calls, served)", "oracle runs",
                            "in worker", "gates CPU s", "gates/native",
                            "calls/native calls", "per call"]))
    slowest = sorted(((g["s"], f"{r['id'].rsplit('/', 1)[-1]} {gid}", g["calls"])
                      for r in ok for gid, g in r["gates"].items()), reverse=True)[:8]
    print("slowest gates: " + ", ".join(f"{name} {s:.2f} s ({calls} calls)"
                                        for s, name, calls in slowest))
    if ok:
        judge = sum(g["judge_cpu_s"] for r in ok for g in r["gates"].values())
        worker = sum(g["worker_cpu_s"] for r in ok for g in r["gates"].values())
        print(f"gates' CPU seconds over {len(ok)} kernels: judge {judge:.2f}, worker {worker:.2f}")
        for key, label in (("ratio", f"{args.profile} gates/native (compile excluded)"),
                           ("calls_ratio", "candidate calls, gates/native"),
                           ("per_call_ratio", "seconds per call, gates/native")):
            print(f"median {label}: {statistics.median(r[key] for r in ok):.2f}x "
                  f"over {len(ok)} kernels")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
