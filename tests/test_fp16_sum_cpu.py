"""An fp16 kernel summing with tl.sum in fp16 is judged on the CPU as on a GPU: the
interpreter rounds each partial of an fp16 reduction (kdiff.sandbox.interpreter_bf16), so
PRC-02 tells it from the same kernel widening its row to fp32 first."""

from __future__ import annotations

from pathlib import Path

from kdiff.data.model import Case, Status, Verdict
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "precision"
PROBLEM = FIXTURES / "fp16_row_sum_problem.py"  # fp16 rows of 1,024, fp32 accumulation


def judge(candidate: str) -> Verdict:
    case = Case(f"fp16-sum-cpu/{candidate}", PROBLEM, FIXTURES / f"{candidate}.py")
    return judge_case(case, RunConfig(native="kernelbench-v0.1", gates=["PRC-02"]), manager())


def test_an_fp16_row_summed_in_fp32_passes_prc02_on_the_cpu():
    verdict = judge("fp16_row_sum_fp32")
    assert verdict.native.accept is True, verdict.native.reason
    assert verdict.gates["PRC-02"].status is Status.PASS, verdict.gates["PRC-02"].detail


def test_an_fp16_row_summed_in_fp16_fails_prc02_on_the_cpu():
    verdict = judge("fp16_row_sum_in_fp16")
    result = verdict.gates["PRC-02"]
    assert verdict.native.accept is True, verdict.native.reason
    assert result.status is Status.FAIL, result.detail
    assert result.signature == "low_precision_accumulator"
