"""ORD-02 determinism and aliasing: K runs on bitwise-identical fresh copies of one input set
(the benchmark's get_inputs() at the verdict's chosen seed: a fixed draw is one a kernel can
recognise and be deterministic on alone), the first as any call is made and the others after
allocator churn, must give bitwise-identical outputs (where earlier gates made plain calls, the
first run is one of them, chosen by the verdict's secret, and the others repeat its inputs, and
one more call on the benchmark's draw is judged for sharing alone); no output may share storage
with an input or address an element of another output, unless the reference's own outputs share
it the same way (a view is the problem's contract), nor lie in the storage of an earlier call's
outputs still alive (a buffer handed out twice). Sharing is read by the judge from the reply's
payload (kdiff.sandbox.protocol.shared_storage); reuse of an earlier call's storage is the
worker's word, from the outputs it keeps alive through every call alike and the storages of
older ones the candidate keeps."""
from __future__ import annotations

import torch

from kdiff.data.model import GateClass, Status
from kdiff.gates.base import Gate, benchmark_draw, chosen_for_verdict
from kdiff.judging.context import (
    CallResult,
    GateContext,
    ReferenceFailure,
    check_structure,
)
from kdiff.numerics.tolerance import bitwise_equal


class Determinism(Gate):
    id = "ORD-02"
    name = "determinism and aliasing"
    klass = GateClass.TOLERANCE_FREE
    summary = "K>=5 runs on fresh clones with allocator churn: bitwise identical; no aliasing"
    shares_calls = False  # repeats of one call

    def judge(self, ctx: GateContext) -> object:
        runs = max(5, ctx.options.determinism_runs)
        seed = chosen_for_verdict(ctx)
        label = f"benchmark get_inputs() {seed}"
        earlier = None if ctx.backward else ctx.earlier_call
        if earlier is not None:
            try:
                expected, contract = ctx.run_reference_sharing(earlier.inputs)
            except ReferenceFailure:
                earlier = None  # outside the reference's contract: a draw of its own, below
        if earlier is None:
            inputs, expected, contract = self.benchmark_runs(ctx, seed)
            return self.judge_runs(ctx, inputs, expected, runs, contract, label)
        # Run 0 is a call an earlier gate made, chosen by the verdict's secret among its
        # plain calls (GateContext.earlier_call): no place in the judge's schedule is it.
        repeated = self.judge_runs(ctx, earlier.inputs, expected, runs, contract,
                                   f"the inputs of an earlier call, chosen by {seed}",
                                   first=earlier.result)
        if repeated.status is not Status.PASS:
            return repeated
        # That call's inputs may lie wherever a gate draws (CMP-01's x1e3), and a kernel may
        # hand back an input as it is where the benchmark's own inputs lie alone (a clamp
        # skipped on [0, 1): kernels/runs/redteam 8/0): one call on the benchmark's draw,
        # its sharing judged as every run's.
        inputs, expected, contract = self.benchmark_runs(ctx, seed)
        aliased = self.judge_runs(ctx, inputs, expected, 1, contract, label)
        return aliased if aliased.status is not Status.PASS else repeated

    def benchmark_runs(self, ctx: GateContext, seed) -> tuple[list, list[torch.Tensor], set[str]]:
        """The benchmark's draw at the verdict's chosen seed, the reference's outputs on it
        and their storage sharing (judge_runs' inputs, expected and contract)."""
        inputs = benchmark_draw(ctx, seed.of(f"{self.id} get_inputs()"))
        expected, contract = ctx.run_reference_sharing(inputs)
        if ctx.backward:
            # autograd hands one tensor to every input a gradient reaches unchanged (the
            # addends of x + r): the reference's gradients share storage as its outputs may.
            expected, contract = ctx.run_reference_sharing(
                inputs, cotangents=ctx.cotangents(expected))
        return inputs, expected, contract

    def judge_runs(self, ctx: GateContext, inputs: list, expected: list[torch.Tensor],
                   runs: int, contract: set[str], label: str,
                   first: CallResult | None = None) -> object:
        """contract: the storage sharing the reference's outputs have themselves (views of
        its inputs), which the candidate's may have too; label: what the inputs are, for a
        failure; first: run 0, made already (an earlier gate's call), or None."""
        run0, first = first, None
        for k in range(runs):
            # Run 0 without churn, the others after one: the worker churns its allocator, so a
            # kernel sees a churn whatever its seed, and one exact only after a churn (noisy
            # wherever no determinism check looks: tests/hostile/exact_only_after_churn.py)
            # answers run 0 otherwise. Run 0's request names no churn at all, as no other
            # gate's plain call does: a kernel reads its requests, and `churn=False` told it
            # (tests/hostile/exact_when_told_of_churn.py).
            churn = {"churn": True, "churn_seed": k} if k > 0 else {}
            got = run0 if k == 0 and run0 is not None else ctx.call(
                [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs], **churn)
            # The reference's shapes before any comparison: a reply's outputs are not
            # materialised at a size the reference does not have.
            check_structure(got.outputs, expected)
            # The worker keeps each call's outputs alive through the next, in every call alike,
            # and watches older ones the candidate keeps (kdiff.sandbox.worker): an output in
            # their storage is a buffer handed out twice.
            aliases = [a for a in got.aliases if a not in contract]
            if aliases:
                return self.result(Status.FAIL, f"{label}, run {k}: {aliases[0]}",
                                   "output_aliasing")
            if first is None:
                first = got.outputs
                continue
            for i, (a, b) in enumerate(zip(first, got.outputs)):
                if not bitwise_equal(a, b):
                    diff = (a.double() - b.double()).abs()
                    n = int((a != b).sum())
                    return self.result(
                        Status.FAIL, f"{label}: run {k} differs from run 0 in output {i}: {n} of "
                        f"{a.numel()} elements, max difference {float(diff.max()):.3g}",
                        "nondeterministic")
        shared = f"; shared storage as the reference's: {', '.join(sorted(contract))}" \
            if contract else ", no shared storage"
        return self.result(Status.PASS, f"{runs} runs bitwise identical{shared}")
