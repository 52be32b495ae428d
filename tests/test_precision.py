"""Judging at the problem's own precision: bf16 and fp8 problems keep their formats in the
candidate's call, the oracle evaluates a reference's own low-precision casts in float64 and
counts them in the bound, the bound's unit roundoff is the format's, input draws stay
representable, and the gates that crashed or could not judge below fp32 run."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from kdiff.data.model import Case, Status, Verdict
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.numerics import inputs as gen
from kdiff.numerics import tolerance
from kdiff.numerics.oracle import run_oracle
from kdiff.verdicts.judge import judge_case

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "kernels" / "KernelBench" / "level1"
RUNS = ROOT / "kernels" / "runs"
FIXTURES = ROOT / "tests" / "fixtures" / "precision"
BF16_GEMM = PROBLEMS / "101_Matmul_bf16.py"
FP8_GEMM = PROBLEMS / "102_Scaled_Matmul_fp8.py"


class Lambda(torch.nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def judge(problem: Path, candidate: Path, gates: list[str]) -> Verdict:
    case = Case(f"precision/{candidate.stem}", problem, candidate)
    return judge_case(case, RunConfig(native="kernelbench-v0.1", gates=gates), manager())


def test_bf16_inputs_and_parameters_stay_bf16_in_the_candidates_call():
    verdict = judge(BF16_GEMM, FIXTURES / "bf16_dtype_asserting.py", ["CMP-02"])
    assert verdict.native.accept is True, verdict.native.reason
    assert verdict.gates["CMP-02"].status is Status.PASS, verdict.gates["CMP-02"].detail


def test_the_oracle_evaluates_an_explicit_bf16_cast_in_float64():
    x = torch.randn(64, dtype=torch.float32, generator=torch.Generator().manual_seed(0))
    oracle = run_oracle(Lambda(lambda t: t.to(torch.bfloat16).float() * 3), [x])
    exact = x.double() * 3
    rounded = x.to(torch.bfloat16).double() * 3
    assert oracle.values[0].dtype == torch.float64
    assert torch.equal(oracle.values[0], exact)
    assert not torch.equal(oracle.values[0], rounded)
    # the cast down is a rounding to bf16 (u = 2^-8) in the bound; the fp32 product is not
    assert oracle.quantizations[0] == 2.0 ** -8
    # a product computed on the bf16 values is stored in bf16: a second rounding
    twice = run_oracle(Lambda(lambda t: (t.to(torch.bfloat16) * 3).float()), [x])
    assert torch.equal(twice.values[0], exact) and twice.quantizations[0] == 2 * 2.0 ** -8


def test_the_oracle_knows_a_bf16_gemm_rounds_once_and_an_fp8_gemm_twice_never():
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(8, 16, generator=g), torch.randn(16, 4, generator=g)
    bf16 = run_oracle(Lambda(torch.matmul), [a.bfloat16(), b.bfloat16()])
    assert bf16.quantizations == [2.0 ** -8]
    fp32 = run_oracle(Lambda(torch.matmul), [a, b])
    assert fp32.quantizations == [0.0]
    # fp8 operands widened to fp32 are exact; only the bf16 store rounds
    fp8 = run_oracle(Lambda(lambda x, y: (x.float() @ y.float()).to(torch.bfloat16)),
                     [a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)])
    assert fp8.quantizations == [2.0 ** -8]


def test_unit_roundoff_of_each_format():
    assert tolerance.unit_roundoff(torch.bfloat16) == 2.0 ** -8
    assert tolerance.unit_roundoff(torch.float16) == 2.0 ** -11
    assert tolerance.unit_roundoff(torch.float8_e4m3fn) == 2.0 ** -4
    assert tolerance.unit_roundoff(torch.float8_e5m2) == 2.0 ** -3


def test_the_bound_of_a_bf16_output_adds_its_half_ulp():
    """A bf16 result of fp32 arithmetic: the probabilistic fp32 part plus 2^-8 * scale, the
    half-ulp of bf16 at the element's scale; ratios measure the error beyond that rounding."""
    scale, depth = torch.tensor([3.0]), 256
    fp32 = tolerance.bound(scale, depth, torch.float32)
    bf16 = tolerance.bound(scale, depth, torch.float32, quantization=2.0 ** -8)
    assert torch.allclose(bf16 - fp32, scale * 2.0 ** -8)
    rounded = torch.tensor([3.0 + 2.0 ** -8 * 3.0])  # a full bf16 rounding error
    mm = tolerance.compare(rounded, torch.tensor([3.0], dtype=torch.float64), bf16,
                           allowance=scale * 2.0 ** -8)
    assert mm.ok and mm.worst_ratio < 1e-3


def test_draws_stay_representable_in_each_format():
    e4m3 = torch.finfo(torch.float8_e4m3fn).max
    big = gen.representable(torch.tensor([1e6, -1e6, 3.0]), torch.float8_e4m3fn)
    assert big.tolist() == [e4m3, -e4m3, 3.0]
    assert math.isnan(gen.representable(torch.tensor([math.nan]), torch.float8_e4m3fn))
    with pytest.raises(ValueError, match="no infinity"):
        gen.representable(torch.tensor([math.inf]), torch.float8_e4m3fn)
    assert gen.representable(torch.tensor([math.inf]), torch.bfloat16).isinf().all()
    assert not gen.holds_infinity(torch.float8_e4m3fn) and gen.holds_infinity(torch.float8_e5m2)


def test_cmp02_runs_on_fp8_inputs_and_catches_a_pointer_cache():
    honest = judge(FP8_GEMM, RUNS / "controls" / "level_1_problem_102_sample_0_kernel.py",
                   ["CMP-02"])
    cached = judge(FP8_GEMM, RUNS / "redteam" / "level_1_problem_102_sample_0_kernel.py",
                   ["CMP-02"])
    assert honest.gates["CMP-02"].status is Status.PASS, honest.gates["CMP-02"].detail
    assert cached.native.accept is True, cached.native.reason
    assert cached.gates["CMP-02"].status is Status.FAIL, cached.gates["CMP-02"].detail


def test_exc01_injects_only_nan_into_e4m3_and_finds_it_swallowed():
    honest = judge(FP8_GEMM, RUNS / "controls" / "level_1_problem_102_sample_0_kernel.py",
                   ["EXC-01"])
    swallowed = judge(FP8_GEMM, RUNS / "redteam" / "level_1_problem_102_sample_1_kernel.py",
                      ["EXC-01"])
    assert honest.gates["EXC-01"].status is Status.PASS, honest.gates["EXC-01"].detail
    assert swallowed.gates["EXC-01"].status is Status.FAIL
    assert swallowed.gates["EXC-01"].signature == "nan_swallowed"


def test_prc01_rejects_fp8_arithmetic_and_fp16_accumulation_of_a_bf16_gemm():
    honest = judge(BF16_GEMM, RUNS / "controls" / "level_1_problem_101_sample_0_kernel.py",
                   ["PRC-01"])
    fp8 = judge(BF16_GEMM, FIXTURES / "bf16_gemm_in_fp8.py", ["PRC-01"])
    fp16 = judge(BF16_GEMM, RUNS / "redteam" / "level_1_problem_101_sample_0_kernel.py",
                 ["PRC-01"])
    assert honest.gates["PRC-01"].status is Status.PASS, honest.gates["PRC-01"].detail
    for verdict in (fp8, fp16):
        result = verdict.gates["PRC-01"]
        assert result.status is Status.FAIL, result.detail
        assert result.signature == "below_working_precision"
    assert fp16.native.accept is True, fp16.native.reason
