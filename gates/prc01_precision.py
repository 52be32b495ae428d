"""PRC-01 precision regime: for each working dtype the problem supports, the candidate's error
against the oracle must be consistent with arithmetic in that dtype. Catches fp32 problems
computed in fp16, bf16 or TF32 (tensor-core fp32 matmuls round operands to 10 mantissa bits),
and problems made in bf16 or fp8 computed below the precision their contract declares: fp8
where bf16 is declared, fp16 accumulation of a bf16 GEMM.

Each recast and each draw past fp16's range is made once more at the seed chosen for the
verdict (`with_one_chosen`: tests/hostile/knows_the_judges_recasts.py)."""

from __future__ import annotations

from typing import Iterator

import torch

from kdiff.data.model import GateResult, Status
from kdiff.gates.base import (
    Seed,
    ThresholdedGate,
    Trial,
    benchmark_draw,
    normal_draw,
    with_one_chosen,
)
from kdiff.gates.triton_calls import runs_triton
from kdiff.judging.context import DTYPE_NAMES, NATIVE, CallResult, Evaluation, GateContext
from kdiff.numerics import inputs as gen
from kdiff.numerics.tolerance import BoundModel, Mismatch, bound, compare, unit_roundoff

# Formats a too-coarse computation may really have used, by unit roundoff. TF32 keeps 10
# explicit mantissa bits, so u = 2^-11 like fp16 (NVIDIA A100 whitepaper, "TF32"); the OCP
# fp8 formats keep 3 (E4M3) and 2 (E5M2).
LOWER_PRECISIONS = (
    ("fp16 or tf32", 2.0**-11),
    ("bf16", 2.0**-8),
    ("fp8 e4m3", 2.0**-4),
    ("fp8 e5m2", 2.0**-3),
)

FP16_MAX = torch.finfo(torch.float16).max
# Inputs past fp16's range for a problem stored in a wider-ranged format (bf16 keeps fp32's
# exponent): normal draws times 2^10, so that squares and products (~2^20 > FP16_MAX = 65504)
# and their sums leave fp16's range while staying 2^100 below bf16's. Arithmetic or an
# accumulator in fp16 overflows there; the declared fp32 arithmetic does not.
PAST_FP16_SCALE = 2.0**10


class PrecisionRegime(ThresholdedGate):
    id = "PRC-01"
    name = "precision regime"
    summary = "error consistent with arithmetic in each working dtype (fp32, fp16, bf16)"
    signature = "below_working_precision"

    def trials(self, ctx: GateContext) -> Iterator[Trial]:
        dtypes = ctx.working_dtypes()
        fixed = range(ctx.options.seeds)
        for dtype in dtypes:
            # At the problem's own precision CMP-01 draws both at the verdict's chosen seed;
            # no other gate draws a recast (a candidate could keep a table of these).
            seeds = [Seed(s) for s in fixed] if dtype is NATIVE else with_one_chosen(ctx, fixed)
            name = ctx.dtype_name(dtype)
            for seed in seeds:
                yield Trial(
                    f"benchmark inputs {seed}",
                    benchmark_draw(ctx, seed.of(f"{self.id} get_inputs() {name}")),
                    dtype,
                )
                yield Trial(
                    f"normal {seed}", normal_draw(ctx, seed.of(f"{self.id} normal {name}")), dtype
                )
        past_fp16 = gen.scaled(gen.normal(), PAST_FP16_SCALE)
        for dtype in (d for d in dtypes if self.past_fp16_applies(ctx, d)):
            for seed in with_one_chosen(ctx, range(310, 310 + ctx.options.seeds)):
                drawn = seed.of(f"{self.id} {past_fp16.name} {ctx.dtype_name(dtype)}")
                yield Trial(
                    f"normal x {PAST_FP16_SCALE:g} (past fp16's range) {seed}",
                    ctx.draw(past_fp16, drawn),
                    dtype,
                )

    @staticmethod
    def past_fp16_applies(ctx: GateContext, dtype: torch.dtype | None) -> bool:
        """At `dtype`, the problem stores data coarser than its arithmetic (bf16, fp8) in
        formats, or beside scales, whose range exceeds fp16's: fp16 arithmetic is then below
        the declared precision and can be told by its range."""
        stored = ctx.native_dtypes() if dtype is NATIVE else {dtype}
        arithmetic_u = unit_roundoff(ctx.arithmetic(dtype))
        return any(unit_roundoff(d) > arithmetic_u for d in stored) and any(
            torch.finfo(d).max > FP16_MAX for d in stored
        )

    def judge(self, ctx: GateContext) -> GateResult:
        result = super().judge(ctx)
        if result.status is Status.FAIL and result.worst_ratio is not None:
            result.detail += "; " + consistent_with(ctx, result.worst_ratio, result.detail)
        return result

    def unjudgeable(
        self, ctx: GateContext, trial: Trial, ev: Evaluation, got: CallResult
    ) -> str | None:
        """A bf16 call on the CPU is judged where its arithmetic is torch's own (real bf16
        rounding). A candidate whose worker has run Triton kernels (its launches since the
        last `clear`, this call's among them) ran them through kdiff's interpreter, whose bf16
        is an emulation: each operation rounded through fp32, in the interpreter's reduction
        order, with no fused multiply-add (docs/cpu.md), not a GPU's order of rounding.
        That the worker ran Triton kernels is its own word, and says nothing of what computed
        the answer (tests/hostile/claims_triton_for_its_bf16.py launches one that computes
        nothing): an answer that no order of bf16 roundings explains is judged here."""
        if not (trial.dtype is torch.bfloat16 and ctx.device == "cpu" and runs_triton(ctx)):
            return None
        if any(not mm.ok for mm in in_any_bf16_order(ev, got.outputs, trial.bound_model)):
            # beyond `ev`'s own bound too: judged, and failed, as any trial
            return None
        return (
            "the candidate's Triton kernels ran through kdiff's interpreter, which "
            "emulates bf16 rather than rounding it as a GPU does, and its answer is within "
            "what bf16 arithmetic in any order of rounding allows; judged on CUDA"
        )


def in_any_bf16_order(
    ev: Evaluation, outputs: list[torch.Tensor], model: BoundModel
) -> list[Mismatch]:
    """`outputs` judged against the bound of every operation on each output's chain rounded
    to bf16, in whatever order: gamma_n = n u / (1 - n u) of the chain's n roundings at bf16's
    u (Higham, Lemma 3.1: a bound for every order, which the probabilistic one does not
    claim), times the traced magnitude, plus the storage roundings `ev` allows; and never
    below `ev`'s own bound under `model`, so that an answer beyond it fails that one too. A
    chain whose n u reaches 1 has no such bound: not judged there. That is tolerance.bound's
    worst-case model at bf16."""
    mismatches = []
    for i, (got, own, scale, depth, quantization, floor) in enumerate(
        zip(
            outputs,
            ev.bounds(model),
            ev.oracle.magnitudes,
            ev.oracle.depths,
            ev.quantizations(),
            ev.floors(),
        )
    ):
        allowance = quantization * scale + floor
        in_any_order = bound(scale, depth, torch.bfloat16, BoundModel.WORST_CASE, quantization,
                             floor=floor)
        mismatches.append(
            compare(
                got,
                ev.expected(i, got),
                torch.maximum(own, in_any_order),
                i,
                allowance=allowance,
                period=ev.periods.get(i),
            )
        )
    return mismatches


def consistent_with(ctx: GateContext, ratio: float, detail: str) -> str:
    """Which coarser arithmetic the observed error fits, for a person reading the failure:
    the bound's unit is the arithmetic the failing trial's dtype computes in."""
    working = next((dt for dt, name in DTYPE_NAMES.items() if f"[{name}]" in detail), torch.float32)
    u = unit_roundoff(ctx.arithmetic(working))
    for label, coarse_u in LOWER_PRECISIONS:
        if coarse_u > u and ratio * u / coarse_u <= 1.0:
            return (
                f"the error is {ratio * u / coarse_u:.2g}x of the {label} bound: "
                f"consistent with {label} arithmetic"
            )
    return f"the error exceeds even the {LOWER_PRECISIONS[-1][0]} bound"
