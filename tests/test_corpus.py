"""The shipped corpus: every candidate says what it is, names real gates, and has a problem;
a problem's reference can be submitted as its own candidate."""
from __future__ import annotations

from pathlib import Path

import pytest

from kdiff.commands.corpus import (
    CONTROLS,
    REDTEAM,
    ExpectedGate,
    HeaderError,
    parse_expected_gates,
    problems,
    reference_kernels,
    shipped_kernels,
)
from kdiff.data.problem import load_candidate_class, load_problem
from kdiff.gates.registry import GATE_MODULES

GATE_IDS = {gid for gid, _ in GATE_MODULES}


def test_expected_gates_parse_with_and_without_signature():
    assert parse_expected_gates("EXC-01=nan_swallowed, ORD-02") == [
        ExpectedGate("EXC-01", "nan_swallowed"), ExpectedGate("ORD-02", None)]
    assert parse_expected_gates(" PRC-01 = below_working_precision ,") == [
        ExpectedGate("PRC-01", "below_working_precision")]


def test_every_shipped_candidate_has_a_header_and_a_problem():
    kernels = shipped_kernels()
    assert {k.run for k in kernels} == {REDTEAM, CONTROLS}
    for k in kernels:
        assert k.name, k.id
        assert k.case.problem.is_file(), k.id
        if k.run == REDTEAM:
            assert k.expected, k.id
            assert set(k.expected_gates) <= GATE_IDS, f"{k.id} names an unknown gate"
            meta = k.case.metadata
            assert meta.get("defect") and meta.get("imitates"), f"{k.id}: defect/imitates"
        assert k.requires in (None, "cpu", "cuda"), k.id


def test_red_team_reject_tests_every_gate():
    redteam = [k for k in shipped_kernels() if k.run == REDTEAM]
    assert len(redteam) >= 19
    named = {g for k in redteam if k.runs_on("cpu") for g in k.expected_gates}
    assert named == GATE_IDS, f"gates no CPU red-team kernel names: {sorted(GATE_IDS - named)}"


def test_a_red_team_kernel_without_expected_gates_is_refused(tmp_path: Path):
    root = tmp_path / "corpus"
    (root / "KernelBench" / "level1").mkdir(parents=True)
    problem = next(iter(problems().values()))
    (root / "KernelBench" / "level1" / problem.name).write_text(problem.read_text())
    pid = problem.name.split("_")[0]
    (root / "runs" / "redteam").mkdir(parents=True)
    (root / "runs" / "redteam" / f"level_1_problem_{pid}_sample_0_kernel.py").write_text(
        '"""\nkdiff-redteam: no gates named\n"""\nModelNew = None\n')
    with pytest.raises(HeaderError, match="expected-gates"):
        shipped_kernels(root)


def test_reference_candidate_is_the_problem_model(tmp_path: Path):
    refs = reference_kernels(tmp_path)
    assert len(refs) == len(problems())
    ref = refs[0]
    cls = load_candidate_class(ref.case.candidate)
    model = load_problem(ref.case.problem).Model
    assert cls.__name__ == model.__name__ and cls is not model  # its own fresh module
    assert ref.honest and not ref.expected
