"""EXC-02 subnormal handling, three states: an honest ReLU keeps subnormal results; the same
ReLU after torch.set_flush_denormal(True) fails with `subnormal_flushed`; KernelBench v0.1's
native check accepts both. A reference that keeps no subnormal result makes the gate skip."""
from __future__ import annotations

import functools
from pathlib import Path

import torch

from kdiff.data.model import Case, Status, Verdict
from kdiff.data.problem import load_problem
from kdiff.gates.exc02_subnormal import SubnormalHandling, is_subnormal
from kdiff.judging.context import GateContext
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.process import CandidateProcess
from kdiff.verdicts.judge import judge_case

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
PROBLEMS = KERNELS / "KernelBench" / "level1"


@functools.lru_cache(maxsize=None)
def judge(run: str, sample: int) -> Verdict:
    candidate = KERNELS / "runs" / run / f"level_1_problem_19_sample_{sample}_kernel.py"
    case = Case(f"{run}/{candidate.stem}", PROBLEMS / "19_ReLU.py", candidate)
    return judge_case(case, RunConfig(native="kernelbench-v0.1", gates=["EXC-02"]), manager())


def test_is_subnormal():
    tiny = torch.finfo(torch.float32).tiny
    x = torch.tensor([0.0, -0.0, tiny, tiny / 2, -tiny / 4, 1.0], dtype=torch.float32)
    assert is_subnormal(x).tolist() == [False, False, False, True, True, False]


def test_honest_relu_keeps_subnormals():
    honest = judge("controls", 21)
    assert honest.native.accept is True, honest.native.reason
    result = honest.gates["EXC-02"]
    assert result.status is Status.PASS, result.detail


def test_flush_to_zero_fails():
    defective = judge("redteam", 23)
    assert defective.native.accept is True, defective.native.reason
    result = defective.gates["EXC-02"]
    assert result.status is Status.FAIL, result.detail
    assert result.signature == "subnormal_flushed", result.detail


def test_no_subnormal_result_is_a_skip(tmp_path: Path):
    """HardSigmoid maps every tiny input to about 0.5: nothing subnormal to keep. The gate
    decides before it calls the candidate, whose worker is never started."""
    problem = PROBLEMS / "6_HardSigmoid.py"
    with CandidateProcess(problem, tmp_path / "never_started.py") as unused:
        result = SubnormalHandling().run(GateContext(load_problem(problem), unused))
    assert result.status is Status.SKIP, result.detail
    assert "keeps no subnormal result" in result.detail
