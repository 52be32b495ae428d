"""Executors: a pool of judges gives the serial run's verdicts; a judge that dies costs its
case a retry, then an error row; Ray on a local instance gives the same verdicts too."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kdiff import plugins
from kdiff.executor import PoolExecutor, RayExecutor, SerialExecutor, _ray_judge
from kdiff.model import Case, NativeVerdict, Verdict
from kdiff.run import judge_one
from kdiff.runconfig import RunConfig

CHECKOUT = Path(__file__).parent / "fixtures" / "kernelbench_checkout"


def comparable(verdicts: list[Verdict]) -> list[dict]:
    """Everything a verdict says except how long things took, in case order."""
    out = []
    for v in sorted(verdicts, key=lambda v: v.case.id):
        data = v.to_json()
        for timed in (data["native"], *data["gates"].values()):
            timed.pop("seconds", None)
        out.append(data)
    return out


@pytest.fixture(scope="module")
def plumbing():
    """Level 1, problem 1 of the fixture run: honest, aliasing, syntax error, wrong."""
    config = RunConfig(root=CHECKOUT, runs=CHECKOUT / "runs" / "run_a", problems=["1"],
                       gates=["ORD-02"])
    pm = plugins.manager()
    cases = pm.hook.kdiff_discover(bench="kernelbench", config=config)
    serial = list(SerialExecutor().judge(cases, judge_one, config, pm, "kernelbench"))
    return config, pm, cases, serial


def test_two_jobs_give_the_serial_verdicts(plumbing):
    config, pm, cases, serial = plumbing
    assert len(cases) == 4 and {v.verifier_accept for v in serial} == {True, False}
    parallel = list(PoolExecutor(2, "cpu").judge(cases, judge_one, config, pm, "kernelbench"))
    assert comparable(parallel) == comparable(serial)


def _dies_on_b(case: Case, config: RunConfig, pm, preset: str) -> Verdict:
    if case.id == "b":
        os._exit(3)  # the judge process itself dies (not a candidate: a kdiff bug, an OOM)
    return Verdict(case, NativeVerdict(True, preset), {})


def test_a_dead_judge_costs_its_case_a_retry_then_an_error_row(tmp_path):
    cases = [Case(id=n, problem=tmp_path / "p.py", candidate=tmp_path / f"{n}.py")
             for n in "abcd"]
    config = RunConfig()
    got = {v.case.id: v for v in PoolExecutor(2, "cpu").judge(cases, _dies_on_b, config,
                                                               plugins.manager(), "kb")}
    assert sorted(got) == ["a", "b", "c", "d"]
    assert got["b"].error_kind == "judge" and "died" in got["b"].error
    assert all(got[n].error is None and got[n].native.accept for n in "acd")


def test_a_node_without_the_files_judges_copies_of_them(plumbing, tmp_path):
    """Ray tasks carry the case's files: a node that does not see them judges copies and
    reports the original paths."""
    config, pm, cases, serial = plumbing
    honest = next(c for c in cases if c.id.endswith("sample_0"))
    elsewhere = Case(id=honest.id, problem=tmp_path / "gone" / honest.problem.name,
                     candidate=tmp_path / "gone" / honest.candidate.name,
                     metadata=honest.metadata, recorded_accept=honest.recorded_accept)
    files = {str(elsewhere.problem): _content(honest.problem),
             str(elsewhere.candidate): _content(honest.candidate)}
    verdict = _ray_judge(elsewhere, files, judge_one, config, "kernelbench")
    assert verdict.case is elsewhere
    expected = next(v for v in serial if v.case.id == honest.id)
    assert comparable([verdict])[0]["gates"] == comparable([expected])[0]["gates"]
    assert verdict.native.accept is True


def _content(path: Path) -> tuple[str, bytes]:
    import hashlib
    data = path.read_bytes()
    return hashlib.sha256(data).hexdigest(), data


def test_ray_on_a_local_instance_gives_the_serial_verdicts(plumbing):
    ray = pytest.importorskip("ray")
    config, pm, cases, serial = plumbing
    try:
        got = list(RayExecutor(2, "cpu").judge(cases, judge_one, config, pm, "kernelbench"))
    finally:
        ray.shutdown()
    assert comparable(got) == comparable(serial)
