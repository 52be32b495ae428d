"""Kernels called through Triton's interpreter as the worker runs them
(kdiff.sandbox.interpreter_device installed), against the interpreter as Triton ships it:
the CPU time of a call, median of 5, each setting in a fresh process (patches persist).

    python benchmarks/interpreter_launch.py [--rows 1024] [--kernel row_stats|softmax|layernorm]
                                            [--tree OTHER_CHECKOUT ...]

`row_stats` is a row reduction (a load, two reductions, a store); `softmax` and `layernorm`
(64 columns a row) are heavy in elementwise operations, block with block and block with
scalar, where the frontend's cost per operation dominates. `--tree` adds the worker's
interpreter of another kdiff source tree (its kdiff/ imported first), for an A/B of two
commits on one machine. CPU time, not wall time: the machine's other load does not enter it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ["TRITON_INTERPRET"] = "1"

KERNELS = ("row_stats", "softmax", "layernorm")


def launcher(kernel: str, rows: int):
    """A call of `kernel` over `rows` rows, its tensors made once."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def row_stats(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr + tl.program_id(0), tl.sum(x * x, axis=0) + tl.max(x, axis=0))

    @triton.jit
    def softmax(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + row * n + offs, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * n + offs, e / tl.sum(e, axis=0), mask=mask)

    @triton.jit
    def layernorm(x_ptr, w_ptr, b_ptr, out_ptr, n, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / n
        d = tl.where(mask, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
        w = tl.load(w_ptr + offs, mask=mask, other=1.0)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0)
        tl.store(out_ptr + row * n + offs, d * rstd * w + b, mask=mask)

    if kernel == "row_stats":
        x, out = torch.randn(rows, 16), torch.empty(rows)
        return lambda: row_stats[(rows,)](x, out, 16, BLOCK=16)
    x, w, b = torch.randn(rows, 64), torch.randn(64), torch.randn(64)
    out = torch.empty_like(x)
    if kernel == "softmax":
        return lambda: softmax[(rows,)](x, out, 64, BLOCK=64)
    return lambda: layernorm[(rows,)](x, w, b, out, 64, 1e-5, BLOCK=64)


def measure(kernel: str, rows: int, installed: bool) -> float:
    if installed:
        from kdiff.sandbox import interpreter_device
        interpreter_device.install()
    call = launcher(kernel, rows)
    call()
    times = []
    for _ in range(5):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--kernel", choices=KERNELS, default="row_stats")
    ap.add_argument("--tree", action="append", default=[],
                    help="another kdiff source tree to time the worker's interpreter of")
    ap.add_argument("--one", choices=["shipped", "worker"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(f"{measure(args.kernel, args.rows, args.one == 'worker'):.4f}")
        return 0
    settings = [("Triton's interpreter as shipped", "shipped", None),
                ("the worker's, this kdiff", "worker", None)]
    settings += [(f"the worker's, {tree}", "worker", tree) for tree in args.tree]
    for label, how, tree in settings:
        env = dict(os.environ)
        if tree:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, env.get("PYTHONPATH")]))
        out = subprocess.run([sys.executable, __file__, "--rows", str(args.rows), "--kernel",
                              args.kernel, "--one", how],
                             capture_output=True, text=True, check=True, env=env).stdout.strip()
        print(f"{label}: {out} CPU s a call ({args.kernel}, {args.rows} rows, median of 5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
