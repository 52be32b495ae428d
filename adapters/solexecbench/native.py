"""SOL-ExecBench's own correctness check, re-implemented from NVIDIA/SOL-ExecBench at 8d2237d
(`src/sol_execbench/driver/templates/eval_driver.py`, the correctness loop;
`src/sol_execbench/core/bench/correctness.py`, `set_seed`, `check_tensor_sanity`,
`compute_error_stats`; `core/bench/config/benchmark_config.py`, seed 200;
`core/data/workload.py`, ToleranceSpec):

- `set_seed(200)` (Python's and torch's generators) once, then every workload in order, each
  with 10 rounds; every round makes fresh inputs (runtime.make_inputs), runs the reference
  (return-value style) and then the solution on the same inputs, in its own convention;
- every round: as many outputs as defined (normalize_outputs raises otherwise: RUNTIME_ERROR);
  round 0: each of the reference's shape and dtype (INCORRECT_SHAPE, INCORRECT_DTYPE); later
  rounds compare whatever shape comes, broadcast (one that does not broadcast raises in
  compute_error_stats, outside any try: the run fails);
- every round, each output in float32 against the reference's (compute_error_stats): a NaN or
  +/-Inf anywhere in either fails, even at the same positions (both -Inf is allowed where the
  workload's `allow_negative_inf` says so); a solution that is all zeros where the reference
  is not fails; otherwise an element matches when |out - ref| <= max_atol + max_rtol |ref|,
  and the output passes when the matched ratio is at least `required_matched_ratio` (0.99 by
  default, atol = rtol = 1e-2) and, where `max_error_cap` is set, no error exceeds it;
- an exception of the solution, or of the input generation, fails (RUNTIME_ERROR); one of the
  reference leaves the verdict open (INVALID_REFERENCE).
Not reproduced: upstream's reward-hack checks (lazy outputs, monkey patching, threads left
running), which kdiff's worker containment and gates stand in for, and safetensors inputs.

The solution runs in the candidate's worker; inputs, the reference and the comparison in the
judge, on the judge's device.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from kdiff.adapters.solexecbench.layout import Tolerance, Workload
from kdiff.adapters.solexecbench.runtime import make_inputs
from kdiff.data.model import NativeVerdict
from kdiff.judging.context import GateContext
from kdiff.judging.native import (
    NativeCheck,
    call_candidate,
    candidate_part,
    reference_broken,
    rejected,
)

SEED = 200  # BenchmarkConfig.seed
ROUNDS = 10  # the correctness rounds per workload
PRESETS = {
    "solexecbench": "SOL-ExecBench: seed 200, 10 rounds of fresh inputs per workload, "
                    "shape and dtype, no NaN/Inf, not all zero, matched ratio >= 0.99 within "
                    "atol + rtol |ref| (default 1e-2 each; the workload's tolerance)",
}


@dataclass
class Comparison:
    """compute_error_stats's outcome for one output."""

    exceeds: bool
    reason: str


def compare(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> Comparison:
    x, y = out.to(torch.float32), ref.to(torch.float32)
    x_bad, y_bad = ~torch.isfinite(x), ~torch.isfinite(y)
    if tol.allow_negative_inf:
        both = (x == float("-inf")) & (y == float("-inf"))
        x_bad, y_bad = x_bad & ~both, y_bad & ~both
    if bool(x_bad.any()) or bool(y_bad.any()):
        nan = bool(torch.isnan(x).any()) or bool(torch.isnan(y).any())
        where = "the solution's" if bool(x_bad.any()) else "the reference's"
        return Comparison(True, f"{'NaN' if nan else 'Inf'} in {where} output")
    ref_norm = float(torch.linalg.vector_norm(y))
    if ref_norm > 0 and float(torch.linalg.vector_norm(x)) == 0:
        return Comparison(True, f"all zeros where the reference's norm is {ref_norm:.4g}")
    if tol.allow_negative_inf:
        keep = ~((x == float("-inf")) & (y == float("-inf")))
        x, y = x[keep], y[keep]
    if x.numel() == 0:
        return Comparison(False, "no elements")
    err = (x - y).abs()
    over = (err > tol.max_atol + tol.max_rtol * y.abs()) | ~torch.isfinite(err)
    matched = min(1.0, max(0.0, 1.0 - float(over.sum()) / err.numel()))
    worst = float(err.max())
    if matched < tol.required_matched_ratio:
        return Comparison(True, f"matched ratio {matched:.6g} < {tol.required_matched_ratio:g} "
                          f"(max abs error {worst:.4g})")
    if tol.max_error_cap is not None and worst > tol.max_error_cap:
        return Comparison(True, f"max abs error {worst:.4g} > cap {tol.max_error_cap:g}")
    return Comparison(False, f"matched ratio {matched:.6g}")


def run_native(ctx: GateContext) -> NativeVerdict:
    module = ctx.problem.module
    definition, workloads, reference = module.DEFINITION, module.WORKLOADS, module.REFERENCE
    custom = (getattr(reference, definition.custom_inputs_entrypoint)
              if definition.custom_inputs_entrypoint else None)
    model = module.Model()

    def judge(trial: tuple[int, Workload, int]) -> None:
        _, workload, round_ = trial
        try:
            inputs = make_inputs(definition, workload, ctx.device, custom)
        except Exception as exc:  # noqa: BLE001 - upstream records RUNTIME_ERROR: a fail
            raise rejected(f"gen_inputs failed: {type(exc).__name__}: {exc}") from None
        try:
            with torch.no_grad():
                expected = model(*inputs)
        except Exception as exc:  # noqa: BLE001 - INVALID_REFERENCE: no verdict
            raise reference_broken(exc) from None
        with candidate_part(lambda exc: f"runtime error: {exc.signature}: {exc.detail}"):
            got = call_candidate(ctx, inputs)
        # Every round: upstream collects each call's outputs by the definition's names
        # (normalize_outputs), which raises on too few or too many (RUNTIME_ERROR).
        if len(got) != len(expected):
            raise rejected(f"runtime error: {len(got)} outputs, {len(expected)} defined")
        if round_ == 0:
            for spec, g, e in zip(definition.outputs, got, expected):
                if g.shape != e.shape:
                    raise rejected(f"incorrect shape: {spec.name} {tuple(g.shape)}, the "
                                   f"reference's {tuple(e.shape)}")
                if g.dtype != e.dtype:
                    raise rejected(f"incorrect dtype: {spec.name} {g.dtype}, the reference's "
                                   f"{e.dtype}")
        for spec, g, e in zip(definition.outputs, got, expected):
            try:  # after round 0 upstream compares whatever shape comes, broadcast
                torch.broadcast_shapes(g.shape, e.shape)
            except RuntimeError:  # upstream's compute_error_stats raises: its run fails
                raise rejected(f"runtime error: {spec.name} of shape {tuple(g.shape)} does not "
                               f"broadcast with the reference's {tuple(e.shape)}") from None
            result = compare(g.to(e.device), e, workload.tolerance)
            if result.exceeds:
                raise rejected(f"incorrect numerical: {spec.name}: {result.reason}")

    random.seed(SEED)
    torch.manual_seed(SEED)
    rounds = [(w, workload, round_) for w, workload in enumerate(workloads)
              for round_ in range(ROUNDS)]
    return NativeCheck("solexecbench").run(
        rounds, judge, f"{len(workloads)} workload(s) x {ROUNDS} rounds within tolerance",
        label=lambda _, t: f"workload {t[0]} ({t[1].uuid}), round {t[2]}")
