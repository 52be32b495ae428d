"""Problems that declare KDIFF_BACKWARD are judged on their gradients too."""
from pathlib import Path

import torch

from kdiff.data.model import Case, Status
from kdiff.judging.context import GateContext, GateOptions
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

CORE = Path(__file__).parent / "fixtures" / "core"
PROBLEM = CORE / "tanh_matmul_backward.py"
ROW_MAX = CORE / "row_max_backward.py"


def reference_as_candidate(tmp_path: Path, problem: Path = PROBLEM) -> Path:
    path = tmp_path / "reference_candidate.py"
    path.write_text(f"import pathlib\nexec(pathlib.Path({str(problem)!r}).read_text())\n"
                    "ModelNew = Model\n")
    return path


def judge(candidate: Path, gates: list[str], problem: Path = PROBLEM):
    config = RunConfig(gates=gates, gate_options=GateOptions(device="cpu"))
    case = Case(id=candidate.stem, problem=problem, candidate=candidate)
    return judge_case(case, config, manager(), "kernelbench-v0.1")


def test_reference_gradients_pass_and_fp16_gradients_fail(tmp_path):
    honest = judge(reference_as_candidate(tmp_path), ["PRC-01", "ORD-02"])
    assert honest.native.accept is True
    assert all(g.status is Status.PASS for g in honest.gates.values()), honest.gates
    defective = judge(CORE / "tanh_matmul_fp16_gradient.py", ["PRC-01"])
    assert defective.native.accept is True  # the benchmark only checks the forward
    prc = defective.gates["PRC-01"]
    assert prc.status is Status.FAIL and prc.signature == "below_working_precision"
    assert "output 1" in prc.detail or "output 2" in prc.detail  # a gradient, not the forward


def test_exc01_judges_gradients_a_backward_swallows_nan_in():
    """EXC-01's reach of an injection covers the forward's outputs only; the gradients after
    them are judged as reached (an IndexError, a kdiff error, before)."""
    defective = judge(CORE / "tanh_matmul_nan_gradient.py", ["EXC-01"])
    exc = defective.gates["EXC-01"]
    assert exc.status is Status.FAIL and exc.signature == "nan_swallowed", exc.detail
    assert "output 0" not in exc.detail, exc.detail  # the forward is exact


def test_an_integer_output_is_judged_as_an_output_and_not_differentiated(tmp_path):
    """torch.max's int64 indices went to autograd.grad with the values: every gate skipped or
    failed ("element 1 of tensors does not require grad"), the reference as its own candidate
    rejected. Only outputs autograd can differentiate are; the indices are judged exactly."""
    gates = ["CMP-01", "ORD-02"]
    for honest in (reference_as_candidate(tmp_path, ROW_MAX), CORE / "row_max_own_backward.py"):
        verdict = judge(honest, gates, ROW_MAX)
        assert verdict.native.accept is True
        assert all(g.status is Status.PASS for g in verdict.gates.values()), verdict.gates
    cmp = judge(CORE / "row_max_wrong_gradient.py", gates, ROW_MAX).gates["CMP-01"]
    assert cmp.status is Status.FAIL and "output 2" in cmp.detail, cmp.detail  # the gradient


def test_an_integer_output_takes_a_zero_cotangent_and_leaves_the_others_draws():
    values, index = torch.max(torch.randn(64, 8), dim=-1)
    mixed = GateContext.cotangents([values, index, values])
    floats = GateContext.cotangents([values, values, values])
    assert index.dtype == mixed[1].dtype and not mixed[1].any()
    assert torch.equal(mixed[0], floats[0]) and torch.equal(mixed[2], floats[2])
