"""Problems that declare KDIFF_BACKWARD are judged on their gradients too."""
from pathlib import Path

from kdiff.data.model import Case, Status
from kdiff.judging.context import GateOptions
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

CORE = Path(__file__).parent / "fixtures" / "core"
PROBLEM = CORE / "tanh_matmul_backward.py"


def reference_as_candidate(tmp_path: Path) -> Path:
    path = tmp_path / "reference_candidate.py"
    path.write_text(f"import pathlib\nexec(pathlib.Path({str(PROBLEM)!r}).read_text())\n"
                    "ModelNew = Model\n")
    return path


def judge(candidate: Path, gates: list[str]):
    config = RunConfig(gates=gates, gate_options=GateOptions(device="cpu"))
    case = Case(id=candidate.stem, problem=PROBLEM, candidate=candidate)
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
