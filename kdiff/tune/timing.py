"""Timing one configuration: seconds per call of the configured candidate at the problem's
inputs, measured in a process of its own.

A Timer is any callable config -> Timing (tests inject a function; the CPU interpreter's time
says nothing about a GPU). ProcessTimer runs `python -m kdiff.tune.timing` on the configured
file: Triton's do_bench on CUDA, or the median wall time of calls ("wall", a smoke run on the
CPU). That process imports the candidate without the worker's confinement (as a CUDA worker
runs: its own session, killed with its group at the deadline) and its number is the
candidate's word: it only ranks configurations the gates have already accepted, so a
candidate that lies about its time can only win among correct ones.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from kdiff.sandbox.workerenv import for_device
from kdiff.tune.space import Config


@dataclass(frozen=True)
class Timing:
    seconds: float | None  # per call; None where it could not be timed
    cost: float = 0.0      # wall seconds the measurement took
    error: str | None = None


class Timer(Protocol):
    def __call__(self, config: Config) -> Timing: ...


def injected(fn: Callable[[Config], float]) -> Timer:
    """A Timer from a function of the configuration (tests, simulations)."""
    return lambda config: Timing(fn(config))


class ProcessTimer:
    def __init__(self, problem: Path, write: Callable[[Config], Path], device: str,
                 method: str = "do_bench", dtype: str | None = None,
                 sizes: dict[str, int] | None = None, timeout: float = 300.0,
                 compile_cache: Path | None = None) -> None:
        """compile_cache: a Triton cache folder the timing processes share (configurations
        that leave a kernel's settings alone reuse its binary); None: Triton's own."""
        self.problem, self.write, self.device, self.method = problem, write, device, method
        self.dtype, self.sizes, self.timeout = dtype, sizes or {}, timeout
        self.compile_cache = compile_cache
        self.cache: dict[Config, Timing] = {}

    def __call__(self, config: Config) -> Timing:
        if config not in self.cache:
            self.cache[config] = self._measure(self.write(config))
        return self.cache[config]

    def _measure(self, candidate: Path) -> Timing:
        cmd = [sys.executable, "-m", "kdiff.tune.timing", str(self.problem), str(candidate),
               "--device", self.device, "--method", self.method,
               "--sizes", json.dumps(self.sizes)] + (["--dtype", self.dtype] if self.dtype else [])
        start = time.perf_counter()
        env = for_device(os.environ, self.device)  # as the judge's workers on that device
        if self.compile_cache is not None:
            env["TRITON_CACHE_DIR"] = str(self.compile_cache)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, env=env)
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return Timing(None, time.perf_counter() - start, f"no time within {self.timeout} s")
        cost = time.perf_counter() - start
        lines = out.strip().splitlines()
        try:
            seconds = float(json.loads(lines[-1])["seconds"])
        except (IndexError, ValueError, KeyError, TypeError):
            tail = (err.strip().splitlines() or ["no output"])[-1]
            return Timing(None, cost, f"exit {proc.returncode}: {tail}")
        if not (math.isfinite(seconds) and seconds > 0):
            return Timing(None, cost, f"not a time: {seconds!r}")
        return Timing(seconds, cost)


def _time_calls(call: Callable[[], object], device: str, method: str) -> float:
    import torch
    call()  # compile and warm up outside the measurement
    if method == "do_bench":
        from triton.testing import do_bench
        return do_bench(call, return_mode="median") / 1e3
    times = []
    for _ in range(5):  # the median of five: one preempted call does not set it
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        call()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    import torch

    from kdiff.data.problem import load_candidate_class, load_problem
    p = argparse.ArgumentParser()
    p.add_argument("problem")
    p.add_argument("candidate")
    p.add_argument("--device", default="cuda")
    p.add_argument("--method", choices=["do_bench", "wall"], default="do_bench")
    p.add_argument("--dtype", default=None)
    p.add_argument("--sizes", default="{}")
    args = p.parse_args()
    problem = load_problem(args.problem)
    problem.set_sizes(json.loads(args.sizes))
    torch.manual_seed(0)
    dtype = getattr(torch, args.dtype) if args.dtype else None

    def place(x):
        if isinstance(x, torch.Tensor):
            return x.to(args.device, dtype if dtype and x.is_floating_point() else x.dtype)
        return x

    model = load_candidate_class(args.candidate)(*problem.get_init_inputs())
    model = model.to(args.device, dtype) if dtype else model.to(args.device)
    inputs = [place(x) for x in problem.get_inputs()]
    with torch.no_grad():
        seconds = _time_calls(lambda: model(*inputs), args.device, args.method)
    print(json.dumps({"seconds": seconds}))


if __name__ == "__main__":
    main()
