"""Where a case's first seconds go in a candidate's worker: its start, the first build, the
first calls with the provenance recording on (the torch profiler on CUDA) and off, with one
worker alone and with N at once (as N judges start their cases together).

Each of the N threads owns one worker (a fork of its judge's zygote, as in a run) and times,
in order: `start` (fork, confinement, imports of the problem and candidate, the memory cap,
which creates the CUDA context), `build` (the candidate's instance on the device), `call 1`
and `call 2` (the benchmark's inputs, recorded unless --unrecorded: the first pays the
candidate's JIT and, on CUDA, the profiler's first start), `read` (the provenance record,
which stops the recording), then `call 3` and `call 4` unrecorded. Medians over the threads.

    python benchmarks/first_call.py --device cuda --jobs 1,14
    python benchmarks/first_call.py --device cuda --jobs 14 --unrecorded
"""
from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path

from tabulate import tabulate

from kdiff.data.problem import load_problem
from kdiff.judging.context import GateContext, GateOptions
from kdiff.judging.native import call_candidate
from kdiff.sandbox.process import CandidateProcess, SandboxLimits

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "kernels/KernelBench/level1/19_ReLU.py"
CANDIDATE = ROOT / "kernels/runs/controls/level_1_problem_19_sample_20_kernel.py"
STEPS = ("start", "build", "call 1", "call 2", "read", "call 3", "call 4")


def one_worker(problem: Path, candidate: Path, device: str, recorded: bool,
               barrier: threading.Barrier, out: dict[str, float]) -> None:
    module = load_problem(problem)
    with CandidateProcess(problem, candidate, device, limits=SandboxLimits()) as cand:
        ctx = GateContext(module, cand, GateOptions(device=device))
        inputs = ctx.benchmark_inputs(seed=0)
        barrier.wait()  # the workers start together, as the judges' first cases do

        def timed(step: str, fn) -> None:  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            fn()
            out[step] = time.perf_counter() - start

        timed("start", lambda: cand.request("forget"))
        if not recorded:
            cand.provenance(recording=False)
        timed("build", ctx.candidate_key)
        timed("call 1", lambda: call_candidate(ctx, inputs))
        timed("call 2", lambda: call_candidate(ctx, inputs))
        timed("read", lambda: cand.provenance(recording=False))
        timed("call 3", lambda: call_candidate(ctx, inputs))
        timed("call 4", lambda: call_candidate(ctx, inputs))


def measure(problem: Path, candidate: Path, device: str, jobs: int, recorded: bool
            ) -> dict[str, float]:
    # The zygote first (a judge's starts once per run), so that `start` is a case's fork.
    with CandidateProcess(problem, candidate, device, limits=SandboxLimits()) as cand:
        cand.request("forget")
    barrier = threading.Barrier(jobs)
    results: list[dict[str, float]] = [{} for _ in range(jobs)]
    threads = [threading.Thread(target=one_worker, args=(problem, candidate, device, recorded,
                                                         barrier, results[i]))
               for i in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = [r for r in results if len(r) == len(STEPS)]
    if not done:
        raise SystemExit("no worker finished its steps")
    return {step: statistics.median(r[step] for r in done) for step in STEPS} | {
        "workers": len(done)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--jobs", default="1,4")
    parser.add_argument("--problem", type=Path, default=PROBLEM)
    parser.add_argument("--candidate", type=Path, default=CANDIDATE)
    parser.add_argument("--unrecorded", action="store_true",
                        help="stop the provenance recording before the first call")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for jobs in (int(j) for j in args.jobs.split(",")):
        row = measure(args.problem, args.candidate, args.device, jobs, not args.unrecorded)
        rows.append({"jobs": jobs, **row})
        print(f"{jobs} worker(s): " + ", ".join(f"{s} {row[s]:.3f} s" for s in STEPS),
              flush=True)
    print(tabulate([[r["jobs"], r["workers"], *(f"{r[s]:.3f}" for s in STEPS)] for r in rows],
                   headers=["jobs", "finished", *STEPS], tablefmt="github"))
    print(f"(seconds, medians over the workers; {args.device}, "
          f"{'unrecorded' if args.unrecorded else 'recorded until read'})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
