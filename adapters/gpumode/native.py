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
from kdiff.judging.native import (
    NativeCheck,
    call_candidate,
    candidate_part,
    reference_broken,
    rejected,
)

PRESETS = {
    "gpumode": "GPU MODE test mode (kernelbot): every task.yml test with its own seed, the "
               "submission on cloned inputs, the problem's check_implementation (its tolerance)",
}


def run_native(ctx: GateContext, graph_capture: bool) -> NativeVerdict:
    module = ctx.problem.module
    reference = module.REFERENCE
    path = reference.__file__
    generate_input = gm.required(reference, "generate_input", path)
    ref_kernel = gm.required(reference, "ref_kernel", path)
    check = gm.required(reference, "check_implementation", path)

    def submission(data: object) -> list[torch.Tensor]:
        """One call of the submission on a copy of `data` (what crosses to the worker is a
        copy, as `_clone_data` makes one), at the inputs' own dtypes."""
        structure, leaves = gm.flatten(data)
        return [o.to(ctx.device) for o in call_candidate(ctx, [structure, *leaves])]

    def judge(args: dict) -> None:
        try:
            data = generate_input(**args)
            shape, expected = gm.flatten(ref_kernel(gm.clone(data)))
        except Exception as exc:  # noqa: BLE001 - the reference's own failure: no verdict
            raise reference_broken(exc) from None
        with candidate_part(lambda exc: f"{exc.signature}: {exc.detail}"):
            if graph_capture:
                submission(data)  # the warm-up call before the capture
            outputs = submission(data)
        if len(outputs) == len(expected):
            output = gm.unflatten(shape, outputs)
        else:  # the check sees the mismatch itself, as it would upstream
            output = outputs[0] if len(outputs) == 1 else tuple(outputs)
        try:
            good, message = check(data, output)
        except Exception as exc:  # noqa: BLE001 - upstream the test process dies: a failure
            raise rejected(f"check_implementation raised {type(exc).__name__}: "
                           f"{str(exc)[:300]}") from None
        if not good:
            raise rejected(str(message)[:500])

    # The harness seeds the process with 42 (POPCORN_SEED unset) before any test; most
    # generate_input functions seed a generator of their own from the test's seed.
    set_seed(BENCHMARK_SEED)
    tests = module.TESTS
    return NativeCheck("gpumode").run(
        tests, judge, f"{len(tests)}/{len(tests)} tests pass check_implementation",
        label=lambda i, args: f"test {i} ({spec(args)})")
