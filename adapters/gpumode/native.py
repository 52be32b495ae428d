"""GPU MODE's own check, as kernelbot runs a submission in test mode, re-implemented from
gpu-mode/reference-kernels at f83cb92 (`problems/*/eval.py`, `_run_single_test` and
`run_testing`) and gpu-mode/kernelbot at 4bdd839 (`src/libkernelbot/run_eval.py`: the tests
file is task.yml's `tests`, one `key: value; ...` line each; a public run sets no
POPCORN_SEED, so each test keeps its own seed):

- for every test, in order: `data = generate_input(**args)`; the submission is called on
  `_clone_data(data)` (every tensor cloned); then `check_implementation(data, output)` on
  the original data, which runs `ref_kernel(data)` and compares with the problem's own rule
  and tolerance (most: `verbose_allclose` with the rtol/atol the problem's reference.py
  passes, NaN and +/-Inf positions required to match; some problems compare otherwise);
- a test fails on `(False, message)`; an exception in the submission or in the check fails
  the run (upstream it propagates out of the test process); all tests must pass;
- where the problem's eval.py captures the submission in a CUDA graph (helion/eval.py), the
  submission is called once first on another clone (its warm-up call) and the second call's
  output is checked. The capture itself is not reproduced: a kernel that cannot be captured
  is not rejected here for that.

The submission runs in the candidate's worker; generate_input, the reference and the check
run in the judge, on the judge's device. The worker returns a flat list of tensors, which is
given to the check in the structure of the reference's output (one tensor, a tuple, ...), so
a submission that returns its tensors in another container is judged as if it had not.
"""
from __future__ import annotations

import torch

from kdiff.adapters.gpumode import data as gm
from kdiff.adapters.gpumode.layout import spec
from kdiff.data.model import NativeVerdict
from kdiff.data.seeding import set_seed
from kdiff.judging.context import BENCHMARK_SEED, GateContext
from kdiff.sandbox.process import CandidateFailure

PRESETS = {
    "gpumode": "GPU MODE test mode (kernelbot): every task.yml test with its own seed, the "
               "submission on cloned inputs, the problem's check_implementation (its tolerance)",
}


def call_candidate(ctx: GateContext, data: object) -> list:
    """One call of the submission on a copy of `data` (what crosses to the worker is a copy,
    as `_clone_data` makes one), at the inputs' own dtypes."""
    structure, leaves = gm.flatten(data)
    payload = [x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in leaves]
    reply = ctx.candidate.request("call", key=ctx.candidate_key(), inputs=[structure, *payload])
    return [o.to(ctx.device) for o in reply["outputs"]]


def run_native(ctx: GateContext, graph_capture: bool) -> NativeVerdict:
    def verdict(accept: bool | None, reason: str, test: int | None = None) -> NativeVerdict:
        return NativeVerdict(accept, "gpumode", "kdiff", test, reason)

    module = ctx.problem.module
    reference = module.REFERENCE
    path = reference.__file__
    generate_input = gm.required(reference, "generate_input", path)
    ref_kernel = gm.required(reference, "ref_kernel", path)
    check = gm.required(reference, "check_implementation", path)
    # The harness seeds the process with 42 (POPCORN_SEED unset) before any test; most
    # generate_input functions seed a generator of their own from the test's seed.
    set_seed(BENCHMARK_SEED)
    tests = module.TESTS
    for i, args in enumerate(tests):
        label = f"test {i} ({spec(args)})"
        try:
            data = generate_input(**args)
            shape, expected = gm.flatten(ref_kernel(gm.clone(data)))
        except Exception as exc:  # noqa: BLE001 - the reference's own failure: no verdict
            return verdict(None, f"{label}: the reference does not run: "
                           f"{type(exc).__name__}: {exc}", i)
        try:
            if graph_capture:
                call_candidate(ctx, data)  # the warm-up call before the capture
            outputs = call_candidate(ctx, data)
        except CandidateFailure as exc:
            return verdict(False, f"{label}: {exc.signature}: {exc.detail}", i)
        if len(outputs) == len(expected):
            output = gm.unflatten(shape, outputs)
        else:  # the check sees the mismatch itself, as it would upstream
            output = outputs[0] if len(outputs) == 1 else tuple(outputs)
        try:
            good, message = check(data, output)
        except Exception as exc:  # noqa: BLE001 - upstream the test process dies: a failure
            return verdict(False, f"{label}: check_implementation raised "
                           f"{type(exc).__name__}: {str(exc)[:300]}", i)
        if not good:
            return verdict(False, f"{label}: {str(message)[:500]}", i)
    return verdict(True, f"{len(tests)}/{len(tests)} tests pass check_implementation")
