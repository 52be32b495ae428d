"""A row reduction's call through Triton's interpreter, as the worker runs it with and without
`tl` patched once a launch (kdiff.sandbox.interpreter_device): median of 5 calls each.

    python benchmarks/interpreter_launch.py [--rows 1024]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ["TRITON_INTERPRET"] = "1"


def measure(rows: int, once: bool) -> float:
    import torch
    import triton
    import triton.language as tl
    from triton.runtime import interpreter

    from kdiff.sandbox import interpreter_device
    interpreter_device._drop_the_overflow_sanitiser(interpreter)
    if once:
        interpreter_device._patch_the_language_once_a_launch(
            interpreter, interpreter_device._launches(interpreter))

    @triton.jit
    def row_stats(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr + tl.program_id(0), tl.sum(x * x, axis=0) + tl.max(x, axis=0))

    x, out = torch.randn(rows, 16), torch.empty(rows)
    row_stats[(rows,)](x, out, 16, BLOCK=16)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        row_stats[(rows,)](x, out, 16, BLOCK=16)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--one", choices=["each-call", "once-a-launch"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(f"{measure(args.rows, args.one == 'once-a-launch'):.3f}")
        return 0
    for how in ("each-call", "once-a-launch"):  # each in a fresh process: patches persist
        out = subprocess.run([sys.executable, __file__, "--rows", str(args.rows), "--one", how],
                             capture_output=True, text=True, check=True).stdout.strip()
        print(f"tl patched {how}: {out} s a call ({args.rows} rows, median of 5)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
