"""KernelBench discovery: checkout and runs layout, recorded verdicts, filters, bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kdiff.adapters.kernelbench.discover import (
    DEFAULT_ENTRY,
    MODEL_NAMED_ENTRY,
    discover,
    entry_points,
    read_eval_results,
    shipped_corpus,
)
from kdiff.judging.hookspecs import DiscoveryError
from kdiff.judging.runconfig import RunConfig

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
    assert case.discovery_error == (f"{run}/level_1_problem_1_sample_0_kernel.py: file not "
                                    "found (a link to ../elsewhere/problem_1.py)")

def test_model_named_runs_look_for_model_too():
    cases = cases_by_id()
    assert entry_points(cases["run_c_filtered/level_1_problem_1_sample_0"]) == MODEL_NAMED_ENTRY
    assert cases["run_c_filtered/level_1_problem_1_sample_0"].recorded_accept is True
    assert entry_points(cases["run_a/level_1_problem_1_sample_0"]) == DEFAULT_ENTRY


def test_a_siblings_class_does_not_choose_how_a_candidate_loads():
    """A `Model`-named candidate beside one that defines `ModelNew`: each file alone says
    which class it is judged as. Decided for the run, the sibling's `ModelNew` failed the
    honest `Model` kernel as does_not_import (tests/fixtures/cross_candidate)."""
    checkout = Path(__file__).parent / "fixtures" / "cross_candidate"
    run = checkout / "runs" / "sibling_names_the_class"
    cases = {c.id: c for c in discover(RunConfig(root=checkout, runs=run))}
    victim, sibling = (cases[f"sibling_names_the_class/level_1_problem_1_sample_{s}"]
                       for s in (0, 1))
    assert entry_points(victim) == MODEL_NAMED_ENTRY
    assert entry_points(sibling) == DEFAULT_ENTRY


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
    from kdiff.judging.runconfig import RunConfig
    root = Path(__file__).parent / "fixtures" / "kbf_checkout"
    cases = discover(RunConfig(root=root, runs=root / "best_agent_solutions"))
    assert [c.id for c in cases] == ["level_1/level_1_problem_3_sample_0"]
    case = cases[0]
    assert case.problem.name == "3_ScaleSum.py" and case.discovery_error is None
    assert entry_points(case) == ("ModelNew", "Model")


def _checkout_with_run(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "checkout"
    (root / "KernelBench" / "level1").mkdir(parents=True)
    problem = CHECKOUT / "KernelBench/level1/1_Double.py"
    (root / "KernelBench" / "level1" / problem.name).write_text(problem.read_text())
    run = root / "runs" / "mine"
    run.mkdir(parents=True)
    return root, run


HONEST = (CHECKOUT / "runs" / "run_a" / "level_1_problem_1_sample_0_kernel.py").read_text()


def test_a_candidate_cannot_opt_out_with_its_own_header(tmp_path):
    """`requires: cuda` in a user's candidate is the candidate's word, not kdiff's: a CPU run
    judges all four files. Only a shipped kernel's header keeps it from a device, and then it
    is listed, with the reason, as undecided."""
    from kdiff.judging.plugins import manager
    from kdiff.verdicts.judge import judge_case
    root, run = _checkout_with_run(tmp_path)
    for sample in range(4):
        text = HONEST.replace("honest doubling", "honest doubling\nrequires: cuda") \
            if sample == 2 else HONEST
        (run / f"level_1_problem_1_sample_{sample}_kernel.py").write_text(text)
    pm = manager()
    cases = pm.hook.kdiff_discover(bench="kernelbench", config=RunConfig(root=root))
    assert len(cases) == 4 and all(c.discovery_error is None for c in cases), cases
    assert cases[2].metadata["requires"] == "cuda"  # read, and not obeyed

    shipped = pm.hook.kdiff_discover(bench="kernelbench", config=RunConfig())
    files = sorted(p for p in (shipped_corpus() / "runs").glob("*/level_*_kernel.py"))
    assert len(shipped) == len(files)  # every shipped file is a row
    cuda_only = [c for c in shipped if c.metadata.get("requires") == "cuda"]
    assert cuda_only, "the shipped corpus has CUDA-only kernels"
    for case in cuda_only:
        assert case.discovery_error == ("not judged on cpu: the shipped kernel's header says "
                                        "`requires: cuda`"), case.id
    verdict = judge_case(cuda_only[0], RunConfig(), pm)
    assert verdict.verifier_accept is None and "not judged" in verdict.error


def test_only_regular_files_of_bounded_size_are_read(tmp_path):
    """A kernel that links to /dev/zero (read, it never ends: MemoryError), a FIFO (open blocks
    until a writer comes), a folder, an oversized file and a FIFO for eval_results.json are
    error rows naming the file and what it is, as is a kernel-like name the layout cannot
    place; the regular kernel beside them is judged."""
    import os
    import threading

    from kdiff.data.files import MAX_SOURCE_BYTES
    root, run = _checkout_with_run(tmp_path)
    names = {s: run / f"level_1_problem_1_sample_{s}_kernel.py" for s in range(5)}
    names[0].write_text(HONEST)
    names[1].symlink_to("/dev/zero")
    os.mkfifo(names[2])
    names[3].mkdir()
    names[4].write_bytes(b"#" * (MAX_SOURCE_BYTES + 1))
    os.mkfifo(run / "eval_results.json")
    (run / "level_1_problem_1_sample_0_copy_kernel.py").write_text(HONEST)
    found: list = []
    worker = threading.Thread(target=lambda: found.extend(discover(RunConfig(root=root))),
                              daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "discovery hung on a FIFO"
    errors = {c.id.split("/", 1)[1]: c.discovery_error for c in found}
    assert errors.pop("level_1_problem_1_sample_0") is None
    assert "eval_results.json: not a regular file: a FIFO" in errors.pop("eval_results.json")
    assert "not judged: not named as the layout names a kernel" in errors.pop(
        "level_1_problem_1_sample_0_copy_kernel")
    kinds = ["a character device (a link to /dev/zero)", "a FIFO", "a folder",
             f"{MAX_SOURCE_BYTES + 1} bytes, more than the {MAX_SOURCE_BYTES} read"]
    for sample, kind in enumerate(kinds, start=1):
        error = errors[f"level_1_problem_1_sample_{sample}"]
        assert error.startswith(str(names[sample])) and error.endswith(kind), error
        assert "\n" not in error


def test_a_problem_that_is_no_regular_file_is_an_error_row(tmp_path):
    import os
    root, run = _checkout_with_run(tmp_path)
    (run / "level_1_problem_1_sample_0_kernel.py").write_text(HONEST)
    fifo = root / "KernelBench" / "level1" / "2_Fifo.py"
    os.mkfifo(fifo)
    (run / "level_1_problem_2_sample_0_kernel.py").write_text(HONEST)
    cases = {c.id: c for c in discover(RunConfig(root=root))}
    assert cases["mine/level_1_problem_1_sample_0"].discovery_error is None
    assert cases["mine/level_1_problem_2_sample_0"].discovery_error == \
        f"{fifo}: not a regular file: a FIFO"
