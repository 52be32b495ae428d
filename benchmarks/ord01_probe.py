"""One ORD-01 trial, shown in full: the candidate's output, the float64 oracle, the working-
precision reference and the bound, element by element. For explaining a verdict that differs
between devices (the one-pass variance: rejected on the CPU, passed on CUDA).

    python benchmarks/ord01_probe.py --device cuda \
        --problem kernels/KernelBench/level1/9_Var_reduction_over_a_dimension.py \
        --candidate kernels/runs/redteam/level_1_problem_9_sample_0_kernel.py
"""
from __future__ import annotations

import argparse

from kdiff.data.problem import load_problem
from kdiff.gates.ord01_summation import ORDER_SENSITIVE
from kdiff.judging.context import GateContext, GateOptions
from kdiff.sandbox.process import CandidateProcess


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", required=True)
    parser.add_argument("--candidate", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--show", type=int, default=4, help="elements printed per trial")
    args = parser.parse_args()
    with CandidateProcess(args.problem, args.candidate, args.device, ("ModelNew",)) as cand:
        ctx = GateContext(load_problem(args.problem), cand, GateOptions(device=args.device))
        for strategy in ORDER_SENSITIVE:
            inputs = ctx.draw(strategy, 200)
            got = ctx.call(inputs).outputs[0].double().cpu()
            ev = ctx.evaluate(inputs)
            oracle, ref = ev.oracle.values[0].cpu(), ev.reference[0].double().cpu()
            bound = ev.bounds()[0].cpu()
            err = (got - oracle).abs()
            print(f"{strategy.name}: inputs {[tuple(x.shape) for x in inputs]}, depth "
                  f"{ev.oracle.depths[0]}, worst candidate error / bound "
                  f"{float((err / bound).max()):.3g}, reference error / bound "
                  f"{float(((ref - oracle).abs() / bound).max()):.3g}")
            for i in range(min(args.show, got.numel())):
                print(f"  [{i}] oracle {float(oracle.flatten()[i]):.9g} candidate "
                      f"{float(got.flatten()[i]):.9g} reference {float(ref.flatten()[i]):.9g} "
                      f"bound {float(bound.flatten()[i]):.3g} magnitude "
                      f"{float(ev.oracle.magnitudes[0].flatten()[i].cpu()):.3g}")


if __name__ == "__main__":
    main()
