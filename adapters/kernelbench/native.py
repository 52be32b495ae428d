"""KernelBench's own correctness check, re-implemented from the upstream harness
(ScalingIntelligence/KernelBench at commit 423217d, `src/kernelbench/eval.py`,
`eval_kernel_against_ref` and `run_and_check_correctness`):

- `set_seed(42)`, `get_init_inputs()`, `set_seed(42)`, `Model(*init)`; the same for `ModelNew`;
  both models are built once and reused for every trial;
- per-trial seeds: `torch.manual_seed(42)` then one `torch.randint(0, 2**32 - 1, (1,))` per
  trial; each trial re-seeds with its seed and calls `get_inputs()`;
- the reference runs first, the candidate second, on the same input tensors, under no_grad;
- a shape mismatch or an exception fails the kernel at once; otherwise
  `torch.allclose(output, output_new, atol=tol, rtol=tol)` must hold in every trial, tol by
  the precision (`get_tolerance_for_precision`: fp32 1e-4, fp16 and bf16 1e-2). Upstream
  casts the problem to the precision it is run at; a problem made in bf16 or fp8 runs at its
  own, and its precision is its output's format (upstream names none below bf16: fp8 outputs
  get bf16's).

The candidate's part of each trial is a `call` of its worker, as every gate's is, inside a
function named as upstream's (so that stack-sniffing kernels behave as they would under the
benchmark), right after the worker's own copy of the reference, whose output it holds as
upstream does, so that allocator history matches the harness. The
comparison happens here, against the judge's own reference output.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from kdiff.data.model import NativeVerdict
from kdiff.judging.context import (
    BENCHMARK_SEED,
    NATIVE,
    GateContext,
    NativeAnswer,
    ReferenceFailure,
)
from kdiff.judging.native import NativeCheck, candidate_part, rejected
from kdiff.numerics.inputs import cast_inputs
from kdiff.sandbox.process import CandidateRaised
from kdiff.sandbox.protocol import CallReply, MalformedReply
from kdiff.sandbox.replies import UnusableOutput


@dataclass(frozen=True)
class NativePreset:
    name: str
    trials: int
    seed: int
    tolerance: dict  # dtype -> atol = rtol
    description: str

    def tolerance_for(self, dtype: torch.dtype) -> float:
        """The preset's tolerance for `dtype`; bf16's for a format it names none for."""
        return self.tolerance[dtype if dtype in self.tolerance else torch.bfloat16]


PRESETS = {
    "kernelbench": NativePreset(
        "kernelbench", 5, BENCHMARK_SEED,
        {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 1e-2},
        "KernelBench at 423217d: 5 trials from seed 42, allclose atol=rtol=1e-4 (fp32)"),
    "kernelbench-v0.1": NativePreset(
        "kernelbench-v0.1", 5, BENCHMARK_SEED,
        {torch.float32: 1e-2, torch.float16: 1e-2, torch.bfloat16: 1e-2},
        "KernelBench v0/v0.1: 5 trials from seed 42, allclose atol=rtol=1e-2"),
    "kernelgym": NativePreset(
        "kernelgym", 5, BENCHMARK_SEED,
        {torch.float32: 1e-2, torch.float16: 1e-2, torch.bfloat16: 1e-2},
        "KernelGYM: 5 trials from seed 42, allclose atol=rtol=1e-2"),
}


def trial_seeds(seed: int, n: int) -> list[int]:
    torch.manual_seed(seed)
    return [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(n)]


def run_native(ctx: GateContext, preset: NativePreset, dtype: torch.dtype | None = NATIVE
               ) -> NativeVerdict:
    check = NativeCheck(preset.name)
    if ctx.too_large:
        return check.verdict(None, ctx.too_large)
    trials = [ctx.benchmark_inputs(s) for s in trial_seeds(preset.seed, preset.trials)]
    try:
        expected = [ctx.run_reference(inputs, preset.seed, dtype) for inputs in trials]
    except ReferenceFailure as exc:
        return check.verdict(None, f"the reference does not run: {exc}")
    reference, candidate = (ctx.reference_key_in_worker(preset.seed, dtype),
                            ctx.candidate_key(preset.seed, dtype))

    def judge(trial: tuple[list, list[torch.Tensor]]) -> None:
        inputs, want = trial
        # A gate's `call`, from frames named as the harness's, the reference run first in
        # them: nothing the candidate can see tells the native check from a gate's call.
        sent = cast_inputs(inputs, dtype)
        with candidate_part(lambda exc: f"runtime error: {exc.detail}", (CandidateRaised,)):
            answer = ctx.request_judged_alone(  # the reference, then the candidate: 2 calls
                lambda timeout, sent=sent: ctx.candidate.request(
                    "call", timeout=timeout, key=candidate, reference_first=reference,
                    stack="benchmark", inputs=sent),
                sent, preset.seed, dtype, calls=2)
        try:
            got = CallReply.parse(answer, len(inputs)).outputs
        except MalformedReply as exc:
            raise UnusableOutput(str(exc)) from None
        ctx.native_answers.append(NativeAnswer(sent, preset.seed, dtype, got))
        if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
            raise rejected(f"output shape mismatch: expected {[tuple(w.shape) for w in want]}, "
                           f"got {[tuple(g.shape) for g in got]}")
        for g, w in zip(got, want):
            w = w.cpu()
            tol = preset.tolerance_for(w.dtype if dtype is NATIVE else dtype)
            if g.dtype != w.dtype:  # upstream's allclose raises, which fails the kernel
                raise rejected(f"output dtype {g.dtype}, the reference's is {w.dtype}")
            try:
                close = torch.allclose(w, g, atol=tol, rtol=tol)
            except (RuntimeError, NotImplementedError) as exc:
                # fp8 has no arithmetic for isclose: upstream's check raises inside its
                # try, which records a runtime error and fails the kernel
                raise rejected(f"runtime error: allclose on {g.dtype} outputs raises: "
                               f"{str(exc).splitlines()[0]}") from None
            if not close:
                diff = (w.double() - g.double()).abs()
                raise rejected(f"output mismatch (max difference {float(diff.max()):.6g}, "
                               f"mean {float(diff.mean()):.6g})")

    tols = sorted({preset.tolerance_for(w.dtype if dtype is NATIVE else dtype)
                   for w in expected[0]})
    return check.run(zip(trials, expected), judge,
                     f"{preset.trials}/{preset.trials} trials within atol=rtol="
                     f"{'/'.join(f'{t:g}' for t in tols)}")
