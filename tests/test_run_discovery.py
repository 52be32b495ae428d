"""KernelBench discovery: checkout and runs layout, recorded verdicts, filters, bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kdiff.adapters.kernelbench.discover import (
    DEFAULT_ENTRY, MODEL_NAMED_ENTRY, discover, entry_points, read_eval_results,
    shipped_corpus)
from kdiff.hookspecs import DiscoveryError
from kdiff.runconfig import RunConfig

CHECKOUT = Path(__file__).parent / "fixtures" / "kernelbench_checkout"


def cases_by_id(**options) -> dict:
    return {c.id: c for c in discover(RunConfig(root=CHECKOUT, **options))}


def test_discovers_every_run_and_kernel_in_order():
    ids = list(cases_by_id())
    assert ids == [
        "run_a/level_1_problem_1_sample_0", "run_a/level_1_problem_1_sample_1",
        "run_a/level_1_problem_1_sample_2", "run_a/level_1_problem_1_sample_3",
        "run_a/level_1_problem_2_sample_0", "run_a/level_1_problem_9_sample_0",
        "run_a/level_2_problem_3_sample_0",
        "run_b_malformed/eval_results.json", "run_b_malformed/level_1_problem_1_sample_0",
        "run_c_filtered/level_1_problem_1_sample_0"]


def test_case_fields_recorded_verdicts_and_header():
    cases = cases_by_id(runs=CHECKOUT / "runs" / "run_a")
    honest, inplace, syntax, wrong = (cases[f"run_a/level_1_problem_1_sample_{s}"]
                                      for s in range(4))
    assert honest.problem == CHECKOUT / "KernelBench/level1/1_Double.py"
    assert honest.candidate.name == "level_1_problem_1_sample_0_kernel.py"
    assert honest.metadata == {"run": "run_a", "level": 1, "problem_id": 1, "sample": 0,
                               "problem": "1_Double", "kdiff-control": "honest doubling"}
    assert inplace.metadata["kdiff-redteam"] == "doubles in place"
    assert inplace.metadata["expected-gates"] == "ORD-02=aliasing"
    assert inplace.metadata["defect"].startswith("writes the result into the input") and \
        inplace.metadata["defect"].endswith("the caller's tensor is modified.")
    # Recorded: correctness, and `compiled: false` is a reject whatever correctness says.
    assert [c.recorded_accept for c in (honest, inplace, syntax, wrong)] == [True, True, False,
                                                                            False]
    assert cases["run_a/level_2_problem_3_sample_0"].recorded_accept is True
    assert cases["run_a/level_1_problem_2_sample_0"].recorded_accept is None  # not recorded
    assert all(c.discovery_error is None for c in (honest, inplace, syntax, wrong))


def test_missing_problem_and_malformed_eval_results_are_error_rows():
    cases = cases_by_id()
    missing = cases["run_a/level_1_problem_9_sample_0"]
    assert "no problem 9 in level 1" in missing.discovery_error
    malformed = cases["run_b_malformed/eval_results.json"]
    assert "eval_results.json: unreadable" in malformed.discovery_error
    assert "\n" not in malformed.discovery_error
    # The run's kernels are still judged, without a recorded verdict.
    kept = cases["run_b_malformed/level_1_problem_1_sample_0"]
    assert kept.discovery_error is None and kept.recorded_accept is None



def test_a_broken_link_is_an_error_row_not_a_rejected_kernel(tmp_path):
    """Public runs keep kernels as links into another run's folder; one whose target is
    missing is bad input (undecided), not a kernel that failed to compile."""
    root = tmp_path / "checkout"
    (root / "KernelBench" / "level1").mkdir(parents=True)
    problem = CHECKOUT / "KernelBench/level1/1_Double.py"
    (root / "KernelBench" / "level1" / problem.name).write_text(problem.read_text())
    run = root / "runs" / "linked"
    run.mkdir(parents=True)
    (run / "level_1_problem_1_sample_0_kernel.py").symlink_to("../elsewhere/problem_1.py")
    (case,) = discover(RunConfig(root=root))
    assert case.discovery_error == (f"{run}/level_1_problem_1_sample_0_kernel.py: candidate "
                                    "file not found (a link to ../elsewhere/problem_1.py)")

def test_model_named_runs_look_for_model_too():
    cases = cases_by_id()
    assert entry_points(cases["run_c_filtered/level_1_problem_1_sample_0"]) == MODEL_NAMED_ENTRY
    assert cases["run_c_filtered/level_1_problem_1_sample_0"].recorded_accept is True
    assert entry_points(cases["run_a/level_1_problem_1_sample_0"]) == DEFAULT_ENTRY


def test_filters_by_level_and_problem_ids_or_globs():
    # A run's malformed eval_results.json is reported only when some of its kernels are.
    assert list(cases_by_id(level=2)) == ["run_a/level_2_problem_3_sample_0"]
    assert list(cases_by_id(problems=["3"])) == ["run_a/level_2_problem_3_sample_0"]
    assert list(cases_by_id(problems=["1_*"], runs=CHECKOUT / "runs" / "run_b_malformed")) == [
        "run_b_malformed/eval_results.json", "run_b_malformed/level_1_problem_1_sample_0"]
    by_glob = cases_by_id(problems=["*_Doub*"], runs=CHECKOUT / "runs" / "run_a")
    assert list(by_glob) == [f"run_a/level_1_problem_1_sample_{s}" for s in range(4)]
    assert set(cases_by_id(problems=["2", "9"], runs=CHECKOUT / "runs" / "run_a")) == {
        "run_a/level_1_problem_2_sample_0", "run_a/level_1_problem_9_sample_0"}


@pytest.mark.parametrize("content", [
    {"1": {"sample_id": 0, "compiled": True, "correctness": True}},  # one record per problem
    {"1": [{"sample_id": 0, "compiled": True, "correctness": True},
           {"sample_id": 1, "compiled": True, "correctness": "False"}]},  # a list
    {"1": {"0": {"compiled": True, "correctness": True},
           "1": {"compiled": False, "correctness": None}}},  # keyed by sample id
])
def test_reads_all_three_upstream_eval_results_shapes(tmp_path, content):
    path = tmp_path / "eval_results.json"
    path.write_text(json.dumps(content))
    results = read_eval_results(path)
    assert results.errors == []
    assert results.samples[(1, 0)].accept is True
    if (1, 1) in results.samples:
        assert results.samples[(1, 1)].accept is False


def test_malformed_entries_are_reported_and_the_rest_kept(tmp_path):
    path = tmp_path / "eval_results.json"
    path.write_text(json.dumps({"1": {"sample_id": 0, "compiled": True, "correctness": True},
                                "2": 17, "x": [], "3": [{"sample_id": 0, "correctness": "maybe"}]}))
    results = read_eval_results(path)
    assert list(results.samples) == [(1, 0)]
    assert len(results.errors) == 3 and all(str(path) in e for e in results.errors)
    path.write_text("[1, 2]")
    assert "expected an object keyed by problem id" in read_eval_results(path).errors[0]


def test_unreadable_roots_raise_discovery_error(tmp_path):
    with pytest.raises(DiscoveryError, match="no KernelBench problems"):
        discover(RunConfig(root=tmp_path))
    with pytest.raises(DiscoveryError, match="no runs folder"):
        discover(RunConfig(root=CHECKOUT, runs=tmp_path / "absent"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DiscoveryError, match="no kernels"):
        discover(RunConfig(root=CHECKOUT, runs=tmp_path / "empty"))


def test_shipped_corpus_is_found_as_package_data():
    root = shipped_corpus()
    assert (root / "KernelBench" / "level1" / "19_ReLU.py").is_file()
    try:
        cases = discover(RunConfig())
    except DiscoveryError as exc:  # no candidates shipped yet
        assert "no kernels" in str(exc)
        return
    for case in cases:
        assert case.metadata["run"] in ("controls", "redteam"), case.id
        assert case.problem.is_relative_to(root / "KernelBench"), case.id
        assert ("kdiff-control" in case.metadata) != ("kdiff-redteam" in case.metadata), \
            f"{case.id}: the header names neither kdiff-control nor kdiff-redteam"


def test_kernelbenchfiltered_layout(tmp_path):
    from kdiff.adapters.kernelbench.discover import discover, entry_points
    from kdiff.runconfig import RunConfig
    root = Path(__file__).parent / "fixtures" / "kbf_checkout"
    cases = discover(RunConfig(root=root, runs=root / "best_agent_solutions"))
    assert [c.id for c in cases] == ["level_1/level_1_problem_3_sample_0"]
    case = cases[0]
    assert case.problem.name == "3_ScaleSum.py" and case.discovery_error is None
    assert entry_points(case) == ("ModelNew", "Model")
