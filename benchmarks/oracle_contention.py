"""What one float64 oracle evaluation (the magnitude trace included) costs on each device, and
on a GPU shared by several judges at once.

A sequential reference (kernels/mamba3, kernels/gdn) is tens of thousands of small operations
per evaluation, and the magnitude trace reads a few booleans back to the host per operation.
Each such read waits for the GPU; with many judges on one GPU, for their work too. This times
the same evaluation in 1 process and in N at once (each its own CUDA context, as judges are),
and on the CPU, with the number of operations and host reads it makes; with --trusting also
the trusting trace (what GateContext runs on a GPU), which skips the fingerprint checks' reads.

    python benchmarks/oracle_contention.py --problem kernels/mamba3/kernelbench/KernelBench/level3/1_Mamba3SISO.py \
        --devices cpu,cuda --procs 1,4,14 --trusting
"""
from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import statistics
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kdiff.data.problem import load_problem
from kdiff.numerics.oracle import run_oracle

HOST_READS = {"aten.equal.default", "aten.is_nonzero.default", "aten._local_scalar_dense.default"}


class Counting(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def _setup(path: str, device: str, sizes: dict[str, int]) -> tuple[torch.nn.Module, list]:
    problem = load_problem(path)
    problem.set_sizes(sizes)
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).double().to(device)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    return model, inputs


def _evaluate(model, inputs, device: str, trusting: bool) -> float:
    start = time.perf_counter()
    run_oracle(model, inputs, magnitudes=True, trusting=trusting)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def times(path: str, device: str, repeats: int, sizes: dict[str, int], barrier=None,
          trusting: bool = False) -> list[float]:
    model, inputs = _setup(path, device, sizes)
    _evaluate(model, inputs, device, trusting)  # first-call costs (dispatch, CUDA's modules)
    if barrier is not None:
        barrier.wait()
    return [_evaluate(model, inputs, device, trusting) for _ in range(repeats)]


def _child(path: str, device: str, repeats: int, sizes: dict[str, int], barrier, results,
           trusting: bool) -> None:
    results.put(statistics.median(times(path, device, repeats, sizes, barrier, trusting)))


def concurrent(path: str, device: str, repeats: int, sizes: dict[str, int], procs: int,
               trusting: bool) -> list[float]:
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(procs), ctx.Queue()
    children = [ctx.Process(target=_child,
                            args=(path, device, repeats, sizes, barrier, results, trusting))
                for _ in range(procs)]
    for c in children:
        c.start()
    medians = [results.get() for _ in children]
    for c in children:
        c.join()
    return sorted(medians)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", required=True)
    parser.add_argument("--devices", default="cpu,cuda")
    parser.add_argument("--procs", default="1,4,14", help="processes at once, on cuda")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="", help="size constants, e.g. seq_len=1368")
    parser.add_argument("--trusting", action="store_true",
                        help="also time each with the trusting trace (no host read per "
                             "traced operand: run_oracle(trusting=True))")
    args = parser.parse_args()
    sizes = {k: int(v) for k, v in (kv.split("=") for kv in args.sizes.split(",") if kv)}
    model, inputs = _setup(args.problem, "cpu", sizes)
    counting = Counting()
    with counting:
        run_oracle(model, inputs, magnitudes=True)
    ops = sum(counting.ops.values())
    reads = sum(n for op, n in counting.ops.items() if op in HOST_READS)
    print(f"{args.problem} {sizes or ''}: {ops} operations per evaluation, {reads} of them read to the host")
    for device in args.devices.split(","):
        if device == "cpu":
            t = times(args.problem, "cpu", args.repeats, sizes)
            print(f"cpu, 1 process: median {statistics.median(t):.3f} s an evaluation ({t})")
            continue
        for n in (int(p) for p in args.procs.split(",")):
            for trusting in (False, True)[:1 + args.trusting]:
                medians = concurrent(args.problem, device, args.repeats, sizes, n, trusting)
                print(f"{device}, {n} processes at once{', trusting' * trusting}: median "
                      f"{statistics.median(medians):.3f} s an evaluation (slowest process "
                      f"{medians[-1]:.3f} s)", flush=True)


if __name__ == "__main__":
    main()
