"""Row reductions called through Triton's interpreter as the worker runs them
(kdiff.sandbox.interpreter_device installed), against the interpreter as Triton ships it:
the CPU time of a call, median of 5, each setting in a fresh process (patches persist).

    python benchmarks/interpreter_launch.py [--rows 1024] [--tree OTHER_CHECKOUT ...]

`--tree` adds the worker's interpreter of another kdiff source tree (its kdiff/ imported
first), for an A/B of two commits on one machine. CPU time, not wall time: the machine's
other load does not enter it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ["TRITON_INTERPRET"] = "1"


def measure(rows: int, installed: bool) -> float:
    import torch
    import triton
    import triton.language as tl

    if installed:
        from kdiff.sandbox import interpreter_device
        interpreter_device.install()

    @triton.jit
    def row_stats(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr + tl.program_id(0), tl.sum(x * x, axis=0) + tl.max(x, axis=0))

    x, out = torch.randn(rows, 16), torch.empty(rows)
    row_stats[(rows,)](x, out, 16, BLOCK=16)
    times = []
    for _ in range(5):
        start = time.process_time()
        row_stats[(rows,)](x, out, 16, BLOCK=16)
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--tree", action="append", default=[],
                    help="another kdiff source tree to time the worker's interpreter of")
    ap.add_argument("--one", choices=["shipped", "worker"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(f"{measure(args.rows, args.one == 'worker'):.4f}")
        return 0
    settings = [("Triton's interpreter as shipped", "shipped", None),
                ("the worker's, this kdiff", "worker", None)]
    settings += [(f"the worker's, {tree}", "worker", tree) for tree in args.tree]
    for label, how, tree in settings:
        env = dict(os.environ)
        if tree:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, env.get("PYTHONPATH")]))
        out = subprocess.run([sys.executable, __file__, "--rows", str(args.rows), "--one", how],
                             capture_output=True, text=True, check=True, env=env).stdout.strip()
        print(f"{label}: {out} CPU s a call ({args.rows} rows, median of 5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
