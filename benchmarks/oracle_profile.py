"""Where the float64 oracle's time goes on one problem's reference: `run_oracle` on the
problem's own get_inputs() under cProfile, its traced operations counted.

    python benchmarks/oracle_profile.py kernels/mamba3/kernelbench/KernelBench/level3/1_Mamba3SISO.py
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import torch

from kdiff.data.problem import load_problem
from kdiff.numerics.oracle import MagnitudeTracer, run_oracle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", help="a KernelBench-layout problem file")
    parser.add_argument("--top", type=int, default=25, help="functions listed (cumulative)")
    args = parser.parse_args()
    problem = load_problem(args.problem)
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).double()
    inputs = problem.get_inputs()
    started = time.perf_counter()
    with torch.no_grad():
        model(*[x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                 for x in inputs])
    plain = time.perf_counter() - started
    traced = 0
    dispatch = MagnitudeTracer.__torch_dispatch__

    def counted(self, *a, **k):
        nonlocal traced
        traced += 1
        return dispatch(self, *a, **k)

    MagnitudeTracer.__torch_dispatch__ = counted
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    run_oracle(model, inputs)
    profile.disable()
    seconds = time.perf_counter() - started
    print(f"{traced} traced operations in {seconds:.3f} s: "
          f"{1e3 * seconds / max(traced, 1):.3f} ms an operation (cProfile on); "
          f"the reference alone in float64, untraced: {plain:.3f} s")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
