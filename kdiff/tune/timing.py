"""Timing one configuration: seconds per call of the configured candidate at the problem's
inputs, measured in a process of its own.

A Timer is any callable config -> Timing (tests inject a function; the CPU interpreter's time
says nothing about a GPU). ProcessTimer runs `python -m kdiff.tune.timing` on the configured
file: Triton's do_bench on CUDA, or the median wall time of calls ("wall", a smoke run on the
CPU). That process imports the candidate without the worker's confinement (as a CUDA worker
runs: its own session, killed with its group at the deadline) and its number is the
candidate's word: it only ranks configurations the gates have already accepted, so a
candidate that lies about its time can only win among correct ones. `--warm-up` builds and
calls the candidate once and measures nothing: it fills the compile cache beside other work,
so that the measurement, run alone, only measures.
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
import threading
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
    """Times each configuration in a process of its own (cached per configuration).

    warm(config) compiles it first, in a process that builds and calls the candidate once at
    the timing sizes and measures nothing, into the shared compile cache: several may run at
    once (a search's batch, beside its judges), so that the measurement that follows, alone,
    finds its kernels compiled. Without a compile cache there is nothing to fill: warm does
    nothing. Thread-safe for warm-ups; measurements are the search's to run one at a time."""

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
        self.warmed: dict[Config, float] = {}  # the warm-up's wall seconds per configuration
        self._lock = threading.Lock()
        self._live: set[subprocess.Popen] = set()

    def __call__(self, config: Config) -> Timing:
        if config not in self.cache:
            self.cache[config] = self._measure(self.write(config))
        return self.cache[config]

    def warm(self, config: Config) -> float:
        """Compile `config` into the compile cache without measuring; its wall seconds (those
        of the first warm-up, again where asked again; 0 where there was nothing to do: no
        compile cache, or measured already without one). A failed warm-up is left for the
        measurement to report."""
        if self.compile_cache is None:
            return 0.0
        with self._lock:
            if config in self.warmed:
                return self.warmed[config]
            if config in self.cache:
                return 0.0
        start = time.perf_counter()
        self._run(self.write(config), ["--warm-up"])
        seconds = time.perf_counter() - start
        with self._lock:
            self.warmed[config] = seconds
        return seconds

    def stop(self) -> None:
        """End the timing processes now running (an interrupted search)."""
        with self._lock:
            for proc in self._live:
                _kill(proc)

    def _run(self, candidate: Path, extra: list[str]) -> tuple[str, str, int | None, bool]:
        """stdout, stderr, exit status, and whether it ran past the timeout (then killed)."""
        cmd = [sys.executable, "-m", "kdiff.tune.timing", str(self.problem), str(candidate),
               "--device", self.device, "--method", self.method,
               "--sizes", json.dumps(self.sizes)] + (["--dtype", self.dtype] if self.dtype else [])
        env = for_device(os.environ, self.device)  # as the judge's workers on that device
        if self.compile_cache is not None:
            env["TRITON_CACHE_DIR"] = str(self.compile_cache)
        proc = subprocess.Popen(cmd + extra, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True, env=env)
        with self._lock:
            self._live.add(proc)
        try:
            out, err = proc.communicate(timeout=self.timeout)
            return out, err, proc.returncode, False
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.communicate()
            return "", "", None, True
        except BaseException:  # interrupted: its own session would outlive us
            _kill(proc)
            raise
        finally:
            with self._lock:
                self._live.discard(proc)

    def _measure(self, candidate: Path) -> Timing:
        start = time.perf_counter()
        out, err, returncode, timed_out = self._run(candidate, [])
        cost = time.perf_counter() - start
        if timed_out:
            return Timing(None, cost, f"no time within {self.timeout} s")
        lines = out.strip().splitlines()
        try:
            seconds = float(json.loads(lines[-1])["seconds"])
        except (IndexError, ValueError, KeyError, TypeError):
            tail = (err.strip().splitlines() or ["no output"])[-1]
            return Timing(None, cost, f"exit {returncode}: {tail}")
        if not (math.isfinite(seconds) and seconds > 0):
            return Timing(None, cost, f"not a time: {seconds!r}")
        return Timing(seconds, cost)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


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
    p.add_argument("--warm-up", action="store_true",
                   help="build and call the candidate once (compiling its kernels into "
                   "TRITON_CACHE_DIR), measure nothing")
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
        if args.warm_up:
            model(*inputs)
            if args.device == "cuda":
                torch.cuda.synchronize()
            print(json.dumps({"warmed": True}))
            return
        seconds = _time_calls(lambda: model(*inputs), args.device, args.method)
    print(json.dumps({"seconds": seconds}))


if __name__ == "__main__":
    main()
