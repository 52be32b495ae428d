"""The judge's own work per candidate call on the CPU, apart from the worker: the input arena's
round (place the inputs, the late-write checks before and after, read them back) and one
comparison with the oracle (tolerance.compare), each at several sizes, in a process as a
judge sets it up (as_a_judge) and, with --glibc-defaults, one that keeps glibc's heap policy.
Prints the median milliseconds of each.

    python benchmarks/judge_side.py [--glibc-defaults] [--repeats 30] [--rounds 7]
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import torch

from kdiff.data.seeding import fp32_means_fp32, one_thread
from kdiff.numerics import tolerance
from kdiff.sandbox.arena import InputArena
from kdiff.verdicts.judge import as_a_judge

SIZES = (1 << 14, 1 << 16, 1 << 18, 1 << 20)  # fp32 elements of each of two inputs


def median_ms(step: Callable[[], object], repeats: int, rounds: int) -> float:
    step()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            step()
        times.append((time.perf_counter() - start) / repeats * 1e3)
    return statistics.median(times)


def arena_round(n: int) -> Callable[[], object]:
    arena = InputArena(1 << 30)
    inputs = [torch.randn(n), torch.randn(n)]

    def step() -> object:
        arena.written_since_read()  # before the request
        places = arena.place(inputs)
        arena.written_since_read()  # before the next one
        return arena.read(places)
    return step


def comparison(n: int) -> Callable[[], object]:
    expected = torch.randn(n, dtype=torch.float64)
    got = (expected + 1e-7 * torch.randn(n, dtype=torch.float64)).float()
    bound = torch.full((n,), 1e-5, dtype=torch.float64)
    allowance = torch.full((n,), 1e-7, dtype=torch.float64)
    return lambda: tolerance.compare(got, expected, bound, allowance=allowance)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--glibc-defaults", action="store_true",
                    help="the judge's settings but glibc's heap policy (no keep_freed_memory)")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    if args.glibc_defaults:
        fp32_means_fp32()
        one_thread()
    else:
        as_a_judge()
    print(f"{'elements':>9} {'arena round ms':>15} {'compare ms':>11}")
    for n in SIZES:
        print(f"{n:>9} {median_ms(arena_round(n), args.repeats, args.rounds):>15.3f} "
              f"{median_ms(comparison(n), args.repeats, args.rounds):>11.3f}")


if __name__ == "__main__":
    main()
