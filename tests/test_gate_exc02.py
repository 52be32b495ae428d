"""EXC-02 subnormal handling, three states: an honest ReLU keeps subnormal results; the same
ReLU after torch.set_flush_denormal(True) fails with `subnormal_flushed`; KernelBench v0.1's
native check accepts both. A reference that keeps no subnormal result makes the gate skip."""
from __future__ import annotations

import functools
import math
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


class _PhaseWalk(torch.nn.Module):
    """An angle state as Mamba-3's: steps added one at a time, each sum reduced modulo 2 pi."""

    def forward(self, theta, steps):
        for step in steps.unbind(-1):
            theta = torch.remainder(theta + step, 2 * math.pi)
        return theta


def test_an_angle_within_rounding_of_a_turn_is_not_judged_for_flushes():
    """A walk of subnormal steps that ends at a subnormal angle: within the arithmetic bound
    of the turn at 0, where an honest order may land on its other side (2 pi - tiny, rounded
    to 2 pi: the same angle as 0). Declared an angle, the output's margin takes in a rounding
    of the period there, and no flush is judged; undeclared, the subnormal is judged. (The
    walk of a Mamba-3 angle state wraps at such dips: 2 pi absorbs the next step and the
    remainder gives 0, so the reference's subnormal angle can be one that the exact sum, -1e-39
    here, does not have.)"""
    from kdiff.gates.exc02_subnormal import honest_margin
    from kdiff.judging.context import Evaluation
    from kdiff.numerics.oracle import run_oracle
    theta = torch.tensor([1e-39])
    steps = torch.tensor([[2e-39, -1e-39]])
    reference = [_PhaseWalk()(theta, steps)]
    assert bool(is_subnormal(reference[0]).all())
    oracle = run_oracle(_PhaseWalk().double(), [theta, steps])
    judged = {}
    for declared in (True, False):
        ev = Evaluation(oracle, reference, torch.float32,
                        periods={0: 2 * math.pi} if declared else {})
        judged[declared] = bool((oracle.values[0].abs() > honest_margin(ev, 0)).any())
    assert judged == {True: False, False: True}
