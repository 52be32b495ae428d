"""PRC-01 precision regime: for each working dtype the problem supports, the candidate's error
against the oracle must be consistent with arithmetic in that dtype. Catches fp32 problems
computed in fp16, bf16 or TF32 (tensor-core fp32 matmuls round operands to 10 mantissa bits)."""
from __future__ import annotations

from typing import Iterator

import torch

from kdiff.data.model import GateResult, Status
from kdiff.gates.base import ThresholdedGate, Trial, benchmark_draw, normal_draw
from kdiff.judging.context import DTYPE_NAMES, GateContext
from kdiff.numerics.tolerance import UNIT_ROUNDOFF

# Formats a too-coarse computation may really have used, by unit roundoff. TF32 keeps 10
# explicit mantissa bits, so u = 2^-11 like fp16 (NVIDIA A100 whitepaper, "TF32").
LOWER_PRECISIONS = (("fp16 or tf32", 2.0 ** -11), ("bf16", 2.0 ** -8))


class PrecisionRegime(ThresholdedGate):
    id = "PRC-01"
    name = "precision regime"
    summary = "error consistent with arithmetic in each working dtype (fp32, fp16, bf16)"
    signature = "below_working_precision"

    def trials(self, ctx: GateContext) -> Iterator[Trial]:
        for dtype in ctx.working_dtypes():
            if dtype is torch.bfloat16 and ctx.device == "cpu":
                continue  # see judge(): the interpreter has no bf16 arithmetic
            for seed in range(ctx.options.seeds):
                yield Trial(f"benchmark inputs seed {seed}", benchmark_draw(ctx, seed), dtype)
                yield Trial(f"normal seed {seed}", normal_draw(ctx, seed), dtype)

    def judge(self, ctx: GateContext) -> GateResult:
        result = super().judge(ctx)
        if result.status is Status.FAIL and result.worst_ratio is not None:
            result.detail += "; " + consistent_with(result.worst_ratio, result.detail)
        if torch.bfloat16 in ctx.working_dtypes() and ctx.device == "cpu":
            result.detail += ("; bfloat16 not judged on the CPU (the Triton interpreter "
                              "computes bf16 on bit patterns); judged on CUDA")
        return result


def consistent_with(ratio: float, detail: str) -> str:
    """Which coarser arithmetic the observed error fits, for a person reading the failure."""
    working = next((dt for dt, name in DTYPE_NAMES.items() if f"[{name}]" in detail),
                   torch.float32)
    u = UNIT_ROUNDOFF[working]
    for label, coarse_u in LOWER_PRECISIONS:
        if coarse_u > u and ratio * u / coarse_u <= 1.0:
            return (f"the error is {ratio * u / coarse_u:.2g}x of the {label} bound: "
                    f"consistent with {label} arithmetic")
    return "the error exceeds even the bf16 bound"
