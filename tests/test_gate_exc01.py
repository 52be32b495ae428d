"""EXC-01 non-finite propagation, three states: an honest ReLU that propagates NaN and Inf
passes; a max-based ReLU (NaN swallowed) and a finite-range clamp (Inf swallowed) fail with
their signatures; KernelBench v0.1's native check accepts all three."""
from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest
import torch

from kdiff.data.model import Case, Status, Verdict
from kdiff.gates.exc01_nonfinite import FINITE, NAN, NEG_INF, POS_INF, _violation, classify
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
RELU = KERNELS / "KernelBench" / "level1" / "19_ReLU.py"


@functools.lru_cache(maxsize=None)
def judge(run: str, sample: int) -> Verdict:
    candidate = KERNELS / "runs" / run / f"level_1_problem_19_sample_{sample}_kernel.py"
    case = Case(f"{run}/{candidate.stem}", RELU, candidate)
    return judge_case(case, RunConfig(native="kernelbench-v0.1", gates=["EXC-01"]), manager())


def test_classes_and_violations():
    t = torch.tensor([1.0, math.nan, math.inf, -math.inf])
    assert classify(t).tolist() == [FINITE, NAN, POS_INF, NEG_INF]
    assert classify(torch.tensor([3, -1])).tolist() == [FINITE, FINITE]
    expected = torch.tensor([NAN, POS_INF, NEG_INF, FINITE], dtype=torch.int8)
    got = torch.tensor([FINITE, FINITE, POS_INF, NAN], dtype=torch.int8)
    wrong = {sig: m.tolist() for sig, m in _violation(expected, got).items()}
    assert wrong == {"nan_swallowed": [True, False, False, False],
                     "inf_swallowed": [False, True, False, False],
                     "inf_sign_flip": [False, False, True, False],
                     "spurious_nonfinite": [False, False, False, True]}
    assert not any(m.any() for m in _violation(expected, expected).values())


def test_honest_relu_passes():
    honest = judge("controls", 20)  # tl.where(x < 0, 0, x)
    assert honest.native.accept is True, honest.native.reason
    result = honest.gates["EXC-01"]
    assert result.status is Status.PASS, result.detail
    assert "0 nan" not in result.detail and "0 +inf" not in result.detail, result.detail


@pytest.mark.parametrize("sample,signature", [(20, "nan_swallowed"), (21, "inf_swallowed")])
def test_defective_relu_fails(sample: int, signature: str):
    defective = judge("redteam", sample)
    assert defective.native.accept is True, defective.native.reason
    result = defective.gates["EXC-01"]
    assert result.status is Status.FAIL, result.detail
    assert result.signature == signature, result.detail
