"""What the torch profiler's first CUDA recording costs a fresh process, and what moves it.

A candidate's worker records its first calls under the torch profiler (kdiff.sandbox.
provenance); on CUDA the first recording in a process cost about 4 s (benchmarks/
first_call.py). Each variant runs in fresh interpreters, N at once, and prints the seconds of
its steps: the CUDA context, a warm-up if the variant has one, the first recorded call and
the second. On an H100 (2026-12-06) every variant's first start took 4.3 to 6.7 s, CPU
activities alone too, before the context or on a thread alike: torch.profiler.profile's
start asks `hasattr(torch, "_inductor")`, which imports the compiler (the recorder now uses
autograd's profiler, which it wraps).

    python benchmarks/profiler_start.py --jobs 1,14
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

VARIANTS = {
    "cpu+cuda": "context, then a recording of CPU and CUDA activities (the worker's)",
    "cuda": "context, then a recording of CUDA activities alone",
    "cpu": "context, then a recording of CPU activities alone",
    "warm-before-context": "an empty CUDA recording before the context, then the worker's",
    "warm-thread": "context, an empty recording on a thread begun at once, 2 s of other "
                   "work, then the worker's",
}


def child(variant: str) -> None:
    import threading

    import torch
    from torch.profiler import ProfilerActivity, profile
    steps: dict[str, float] = {}

    def timed(name: str, fn) -> None:  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        fn()
        steps[name] = time.perf_counter() - start

    both = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    activities = {"cuda": [ProfilerActivity.CUDA], "cpu": [ProfilerActivity.CPU]}.get(variant,
                                                                                         both)

    def empty(acts=activities) -> None:  # type: ignore[no-untyped-def]
        with profile(activities=acts):
            pass

    if variant == "warm-before-context":
        timed("warm-up", lambda: empty([ProfilerActivity.CUDA]))
    x = None

    def context() -> None:
        nonlocal x
        x = torch.ones(1 << 20, device="cuda")
        torch.cuda.synchronize()

    timed("context", context)
    if variant == "warm-thread":
        thread = threading.Thread(target=empty)
        start = time.perf_counter()
        thread.start()
        time.sleep(2.0)  # the judge's own work before the first call
        thread.join()
        steps["warm-up (joined)"] = time.perf_counter() - start

    def recorded() -> None:
        with profile(activities=activities):
            (x * 2).sum().item()
        torch.cuda.synchronize()

    timed("call 1", recorded)
    timed("call 2", recorded)
    print(json.dumps(steps))


def run(variant: str, jobs: int) -> dict[str, float]:
    procs = [subprocess.Popen([sys.executable, __file__, "--child", variant],
                              stdout=subprocess.PIPE, text=True) for _ in range(jobs)]
    results = []
    for p in procs:
        out, _ = p.communicate()
        lines = out.strip().splitlines()
        if p.returncode == 0 and lines:
            results.append(json.loads(lines[-1]))
    if not results:
        return {}
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default="1,14")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    for jobs in (int(j) for j in args.jobs.split(",")):
        for variant in args.variants.split(","):
            steps = run(variant, jobs)
            print(f"{jobs} at once, {variant}: " + ", ".join(
                f"{k} {v:.3f} s" for k, v in steps.items()), flush=True)


if __name__ == "__main__":
    main()
