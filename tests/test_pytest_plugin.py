"""The pytest plugin: contracts as tests, through the command line or the fixture."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch  # noqa: F401 - in-process runs forget modules they import: torch only loads once

import kdiff.commands.cli
import kdiff.verdicts.judge  # noqa: F401
from kdiff.gates.registry import select

pytest_plugins = ("pytester",)
select(["ORD-02"])


@pytest.fixture(autouse=True)
def own_rootdir(pytester):
    """The inner sessions' root is their own folder, not kdiff's (whose tests they would
    otherwise collect, the candidates' paths being under it); other plugins stay out."""
    pytester.makeini("[pytest]\naddopts = -p no:hypothesispytest -p no:benchmark\n")

HOSTILE = Path(__file__).parent / "hostile"
PROBLEM, HONEST, CRASHES = HOSTILE / "problem.py", HOSTILE / "honest.py", HOSTILE / "exits.py"


def test_options_add_one_test_per_candidate_and_gate(pytester):
    pytester.makepyfile(test_unrelated="def test_theirs():\n    assert True\n")
    result = pytester.runpytest_inprocess(
        "--kdiff-problem", str(PROBLEM), "--kdiff-candidate", str(HONEST),
        "--kdiff-candidate", str(CRASHES), "--kdiff-gates", "ORD-02", "-rA")
    result.assert_outcomes(passed=1, failed=1, deselected=1)  # no paths: only kdiff tests
    lines = result.stdout.lines
    assert any(ln.startswith("PASSED") and "kdiff[honest.py][ORD-02]" in ln for ln in lines)
    assert any(ln.startswith("FAILED") and "kdiff[exits.py][ORD-02]" in ln for ln in lines)
    assert "exits.py: ORD-02 crash: worker exited with status 0" in result.stdout.str()


def test_named_paths_run_beside_the_contract(pytester):
    pytester.makepyfile(test_theirs="def test_theirs():\n    assert True\n")
    result = pytester.runpytest_inprocess(
        "test_theirs.py", "--kdiff-problem", str(PROBLEM), "--kdiff-candidate", str(HONEST),
        "--kdiff-gates", "ORD-02")
    result.assert_outcomes(passed=2)


def test_bad_options_are_usage_errors(pytester):
    result = pytester.runpytest_inprocess("--kdiff-candidate", str(HONEST))
    assert result.ret == 4 and "needs --kdiff-problem" in result.stderr.str()
    result = pytester.runpytest_inprocess("--kdiff-problem", str(PROBLEM), "--kdiff-candidate",
                                          str(HONEST), "--kdiff-gates", "NOPE-1")
    assert result.ret == 4 and "unknown gate" in result.stderr.str()


def test_fixture_returns_the_verdict(pytester):
    pytester.makepyfile(test_contract=f"""
        def test_honest_kernel_keeps_the_contract(kdiff_verify):
            verdict = kdiff_verify({str(PROBLEM)!r}, {str(HONEST)!r}, gates=["ORD-02"])
            assert verdict.native.accept and verdict.verifier_accept
            assert verdict.gates["ORD-02"].status.value == "pass"

        def test_crashing_kernel_is_rejected(kdiff_verify):
            verdict = kdiff_verify({str(PROBLEM)!r}, {str(CRASHES)!r}, gates=["ORD-02"])
            assert verdict.verifier_accept is False
            assert verdict.gates["ORD-02"].signature == "crash"
    """)
    pytester.runpytest_inprocess().assert_outcomes(passed=2)


def test_the_session_counts_and_heads_the_kdiff_tests(pytester):
    """'collected 2 items', not 0, and the header `kdiff run` prints."""
    result = pytester.runpytest_inprocess(
        "--kdiff-problem", str(PROBLEM), "--kdiff-candidate", str(HONEST),
        "--kdiff-gates", "ORD-02,CMP-01", "--co")
    out = result.stdout.str()
    assert "collected 2 items" in out, out
    assert (f"kdiff: problem {PROBLEM}; kernels 1; native check kernelbench" in out
            and "atol=rtol=" in out and "gates ORD-02,CMP-01; tests 2" in out), out
