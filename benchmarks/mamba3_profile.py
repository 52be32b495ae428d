"""Where kernels/mamba3's time goes on a GPU: the first call at each of a few problem sizes
(Triton's compilation, the cost a judge pays per held-out size) against the second, then
torch.profiler's kernel table for the forward, the forward + backward and the decode step
at the paper's shapes (kernels/mamba3/bench.py's).

    python benchmarks/mamba3_profile.py [--rows 12]
"""
from __future__ import annotations

import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile

from kdiff.kernels.mamba3 import bench
from kdiff.kernels.mamba3.backward import mamba3_siso
from kdiff.kernels.mamba3.reference import States

# (B, T, key heads, heads per key head, K, V): problem 1's size and sizes like CMP-03's
FIRST_CALL_SIZES = ((1, 24, 1, 2, 16, 16), (1, 24, 1, 2, 16, 16), (1, 17, 1, 2, 16, 16),
                    (1, 24, 1, 2, 34, 16), (1, 24, 1, 2, 16, 17), (3, 127, 1, 3, 16, 16))


def seconds(fn) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def train_step(low, f32):
    leaves = [x.detach().requires_grad_() for x in low + f32]
    q, k, v, trap, qb, kb, z, adt, dt, angles, D, *states = leaves
    out, final = mamba3_siso(q, k, v, adt, dt, trap, qb, kb, angles, D, z, States(*states))
    outs = [out, *final]
    torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=12)
    args = ap.parse_args()
    for dtype in (torch.float32, torch.bfloat16):
        for B, T, Hq, G, K, V in FIRST_CALL_SIZES:
            low, f32 = bench.inputs(B, T, dtype, (Hq, G, K, V))
            fwd = seconds(lambda low=low, f32=f32: bench.ours_forward(low, f32))
            bwd = seconds(lambda low=low, f32=f32: train_step(low, f32))
            print(f"first call {dtype} B{B} T{T} H{Hq}x{G} K{K} V{V}: forward {fwd:.2f} s, "
                  f"forward + backward {bwd:.2f} s", flush=True)
    low, f32 = bench.inputs(16, 2048, torch.bfloat16)
    for name, fn in (("forward 16x2048", lambda: bench.ours_forward(low, f32)),
                     ("forward + backward 16x2048", lambda: train_step(low, f32))):
        fn()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        print(name)
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=args.rows),
              flush=True)


if __name__ == "__main__":
    main()
