"""PRC-01 judges a bf16 recast on the CPU where the candidate's bf16 arithmetic is torch's
own (real rounding), and leaves it to CUDA, saying why, where the candidate's Triton kernels
ran through kdiff's interpreter (an emulation of bf16)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kdiff.data.model import Case, Status, Verdict
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "precision"
PROBLEM = FIXTURES / "bf16_recast_problem.py"  # fp32, KDIFF_DTYPES = ("float32", "bfloat16")
TRIALS_AT_NATIVE = 4  # two seeds of the benchmark's inputs and of the normal
TRIALS_PER_RECAST = 6  # and the seed chosen for the verdict


def judge(candidate: str, problem: Path = PROBLEM) -> Verdict:
    case = Case(f"prc01-cpu-bf16/{candidate}", problem, FIXTURES / f"{candidate}.py")
    return judge_case(case, RunConfig(native="kernelbench-v0.1", gates=["PRC-01"]), manager())


def test_an_honest_torch_candidate_passes_the_bf16_trials_on_the_cpu():
    verdict = judge("bf16_recast_honest")
    result = verdict.gates["PRC-01"]
    assert verdict.native.accept is True, verdict.native.reason
    assert result.status is Status.PASS, result.detail
    # fp32 and bf16 both judged
    assert result.detail.startswith(
        f"{TRIALS_AT_NATIVE + TRIALS_PER_RECAST} trial(s) within bound"), result.detail


def test_a_bf16_path_in_fp8_fails_on_the_cpu_and_the_native_check_accepts_it():
    verdict = judge("bf16_recast_in_fp8")
    result = verdict.gates["PRC-01"]
    assert verdict.native.accept is True, verdict.native.reason
    assert result.status is Status.FAIL, result.detail
    assert result.signature == "below_working_precision"
    assert "[bfloat16]" in result.detail and "fp8 e4m3" in result.detail


def test_a_triton_candidates_bf16_trials_are_left_to_cuda_saying_why():
    verdict = judge("bf16_recast_triton")
    result = verdict.gates["PRC-01"]
    assert verdict.native.accept is True, verdict.native.reason
    assert result.status is Status.PASS, result.detail  # its fp32 trials
    assert result.detail.startswith(f"{TRIALS_AT_NATIVE} trial(s) within bound"), result.detail
    assert (
        "trial(s) not judged (benchmark inputs seed 0 [bfloat16]: the "
        "candidate's Triton kernels ran through kdiff's interpreter"
    ) in result.detail


RMSNORM = FIXTURES / "bf16_recast_rmsnorm_problem.py"  # fp32, width 4096, declares bf16


@pytest.mark.parametrize(
    "defective",
    [
        "bf16_recast_rmsnorm_bf16_sum",  # running sum in bf16
        "bf16_recast_rmsnorm_in_fp16",
    ],
)  # fp16's range
def test_a_bf16_recast_is_judged_as_torch_computes_it_fp32_inside(defective):
    """torch's bf16 reference computes each op in fp32 and rounds its result to bf16: an
    honest RMSNorm passes; a mean square summed in bf16 (stalling once the sum's half ulp
    passes the terms), and one computed in fp16 (overflowing at PRC-01's inputs past fp16's
    range), fail. Both were within the bound of bf16 arithmetic at depth 4096."""
    honest = judge("bf16_recast_rmsnorm_honest", RMSNORM)
    bad = judge(defective, RMSNORM)
    for verdict in (honest, bad):
        assert verdict.native.accept is True, verdict.native.reason
    assert honest.gates["PRC-01"].status is Status.PASS, honest.gates["PRC-01"].detail
    result = bad.gates["PRC-01"]
    assert result.status is Status.FAIL, result.detail
    assert "[bfloat16]" in result.detail
