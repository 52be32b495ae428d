"""Executors: a pool of judges gives the serial run's verdicts; a judge that dies costs its
case a retry, then an error row; Ray on a local instance gives the same verdicts too."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from processes import named  # beside this file

from kdiff.commands import executor
from kdiff.commands.executor import (
    PoolExecutor,
    RayExecutor,
    SerialExecutor,
    _ray_judge,
    make_executor,
)
from kdiff.commands.run import judge_one
from kdiff.data.model import Case, NativeVerdict, Verdict
from kdiff.judging import plugins
from kdiff.judging.runconfig import RunConfig

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


def _accepts_where_the_probe_is_imported(case: Case, config: RunConfig, pm, preset: str,
                                          resume=None) -> Verdict:
    return Verdict(case, NativeVerdict("first_import_probe" in sys.modules, preset), {})


def test_cpu_judges_are_forked_with_every_judge_s_first_imports_made(tmp_path, monkeypatch):
    """What each judge would import at its first case (torch._dynamo, 1 s a judge) is imported
    once before the judges fork, and each judge has it from the start."""
    (tmp_path / "first_import_probe.py").write_text("")  # imported by nothing else
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(executor, "JUDGES_FIRST_IMPORTS", ("first_import_probe",))
    cases = [Case(id=n, problem=tmp_path / "p.py", candidate=tmp_path / f"{n}.py") for n in "ab"]
    got = list(PoolExecutor(2, "cpu").judge(cases, _accepts_where_the_probe_is_imported,
                                            RunConfig(), plugins.manager(), "kb"))
    assert len(got) == 2 and all(v.error is None and v.native.accept for v in got), got


def _dies_on_b(case: Case, config: RunConfig, pm, preset: str, resume=None) -> Verdict:
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


def _dies_on_b_beside_slow_a(case: Case, config: RunConfig, pm, preset: str, resume=None) -> Verdict:
    if case.id == "a":
        time.sleep(1.0)  # still being judged when b's judge dies, each time
    return _dies_on_b(case, config, pm, preset)


def test_a_dead_judge_costs_nothing_to_the_case_judged_beside_it(tmp_path):
    """A judge that dies breaks the whole pool, and the case judged beside it is cancelled
    with it. Each case in flight is then judged again alone: the one whose judge dies alone
    gets the error row, the other its verdict (on the CPU one TritonBench case drove its judge
    to 23.6 GB and the OOM killer took it, twice: both cases in flight had ended as error
    rows)."""
    cases = [Case(id=n, problem=tmp_path / "p.py", candidate=tmp_path / f"{n}.py")
             for n in "abcd"]
    got = {v.case.id: v for v in PoolExecutor(2, "cpu").judge(
        cases, _dies_on_b_beside_slow_a, RunConfig(), plugins.manager(), "kb")}
    assert sorted(got) == ["a", "b", "c", "d"]
    assert got["b"].error_kind == "judge" and "died" in got["b"].error
    assert all(got[n].error is None and got[n].native.accept for n in "acd"), \
        {n: got[n].error for n in "acd"}


# This process's simulated CUDA context: once broken, every later case judged here breaks.
_CONTEXT_BROKEN = False


def _breaks_its_context_on_b(case: Case, config: RunConfig, pm, preset: str, resume=None) -> Verdict:
    """Case b's reference raises a device-side assert the first time it is judged (the
    marker file says whether it has been); native.reason says which process judged."""
    global _CONTEXT_BROKEN
    from kdiff.verdicts.judge import device_broken
    first = case.problem.parent / "b_broke_a_context"
    if case.id == "b" and not first.exists():
        first.write_text(str(os.getpid()))
        _CONTEXT_BROKEN = True
        return device_broken(Verdict(case, NativeVerdict(None, preset), {}),
                             "CUDA error: device-side assert triggered")
    if _CONTEXT_BROKEN:
        return device_broken(Verdict(case, NativeVerdict(None, preset), {}),
                             "CUDA error: device-side assert triggered (an earlier case's)")
    return Verdict(case, NativeVerdict(True, preset, reason=str(os.getpid())), {})


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_judge_whose_cuda_context_broke_is_replaced(tmp_path, jobs: int):
    """b is judged again by a fresh judge; no later case meets the broken context."""
    cases = [Case(id=n, problem=tmp_path / "p.py", candidate=tmp_path / f"{n}.py")
             for n in "abcdef"]
    got = {v.case.id: v for v in PoolExecutor(jobs, "cpu").judge(
        cases, _breaks_its_context_on_b, RunConfig(), plugins.manager(), "kb")}
    assert sorted(got) == list("abcdef")
    assert all(v.error is None and v.native.accept for v in got.values()), \
        {n: v.error for n, v in got.items()}
    assert got["b"].native.reason != (tmp_path / "b_broke_a_context").read_text()


def _always_breaks_on_b(case: Case, config: RunConfig, pm, preset: str, resume=None) -> Verdict:
    (case.problem.parent / "b_broke_a_context").unlink(missing_ok=True)
    return _breaks_its_context_on_b(case, config, pm, preset)


def test_a_case_that_breaks_every_fresh_judge_is_an_error_row_alone(tmp_path):
    cases = [Case(id=n, problem=tmp_path / "p.py", candidate=tmp_path / f"{n}.py")
             for n in "abcd"]
    got = {v.case.id: v for v in PoolExecutor(2, "cpu").judge(
        cases, _always_breaks_on_b, RunConfig(), plugins.manager(), "kb")}
    assert got["b"].error_kind == "judge" and "device-side assert" in got["b"].error
    assert all(got[n].error is None and got[n].native.accept for n in "acd"), \
        {n: got[n].error for n in "acd"}


def test_cuda_runs_judge_in_processes_of_their_own_even_one_at_a_time():
    assert isinstance(make_executor("local", 1, "cuda"), PoolExecutor)
    assert isinstance(make_executor("local", 1, "cpu"), SerialExecutor)


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


@pytest.fixture(scope="module")
def ray_instance():
    """One local Ray instance for the tests that need one (it takes 15 s to start here)."""
    ray = pytest.importorskip("ray")
    yield ray
    ray.shutdown()


# A local Ray instance starts in about 15 s, shared by the two Ray tests: the `slow` set.
@pytest.mark.slow
def test_ray_on_a_local_instance_gives_the_serial_verdicts(plumbing, ray_instance):
    config, pm, cases, serial = plumbing
    got = list(RayExecutor(2, "cpu").judge(cases, judge_one, config, pm, "kernelbench"))
    assert comparable(got) == comparable(serial)


@pytest.mark.slow
def test_a_worker_under_ray_reaches_neither_the_raylet_nor_its_variables(ray_instance):
    """The judge runs in a Ray worker, beside the raylet's and plasma store's Unix sockets;
    the candidate's worker sees no RAY_* variable and cannot connect to them."""
    hostile = Path(__file__).parent / "hostile"
    case = Case(id="ray_socket", problem=hostile / "problem.py",
                candidate=hostile / "ray_socket.py")
    config = RunConfig(gates=["ORD-02"])
    verdict, = RayExecutor(1, "cpu").judge([case], judge_one, config, plugins.manager(),
                                           "kernelbench")
    assert verdict.error is None and verdict.native.accept is False, verdict.native
    gate = verdict.gates["ORD-02"]
    assert gate.signature == "raised" and "PermissionError" in gate.detail, gate


def _slow_after_a(case: Case, config: RunConfig, pm, preset: str, resume=None) -> Verdict:
    import time
    if case.id != "a":
        time.sleep(120)  # still judging when the run is interrupted
    return Verdict(case, NativeVerdict(True, preset), {})


def test_an_interrupt_ends_the_pool_at_once_after_the_verdicts_so_far(tmp_path):
    import signal
    import time
    cases = [Case(id=n, problem=tmp_path / "p.py", candidate=tmp_path / f"{n}.py")
             for n in "abc"]
    # what the run found: Python's default, or SIG_IGN where a shell started it in the
    # background (`cmd &` in a script ignores SIGINT)
    before = signal.getsignal(signal.SIGINT)
    verdicts = PoolExecutor(2, "cpu").judge(cases, _slow_after_a, RunConfig(),
                                            plugins.manager(), "kb")
    assert next(verdicts).case.id == "a"
    assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler, \
        "SIGINT would raise wherever the driver happens to be"
    start = time.monotonic()
    os.kill(os.getpid(), signal.SIGINT)  # the driver alone, as `kill -INT` would
    with pytest.raises(KeyboardInterrupt):
        next(verdicts)
    assert time.monotonic() - start < 30, "the judges still running were waited for"
    assert signal.getsignal(signal.SIGINT) is before


# A candidate still in its call when the run is interrupted: it names itself (PR_SET_NAME) so
# that the test can look for it afterwards.
SLEEPER_NAME = "kdiff-sleeper"
SLEEPER = (f"import ctypes, time; ctypes.CDLL(None).prctl(15, b'{SLEEPER_NAME}', 0, 0, 0); "
           "time.sleep(300); return x * 2.0")


def test_ctrl_c_on_the_process_group_still_reports_what_was_judged(tmp_path):
    """Ctrl-C (or `timeout -s INT`) signals every process of the group, judges included; the
    workers still in a call go with their judges (the zygote kills its live children when its
    judge goes away: before, a worker asleep in its call outlived the run by minutes)."""
    import json
    import shutil
    import signal
    import subprocess
    import sys
    import threading
    import time
    root = tmp_path / "checkout"
    shutil.copytree(CHECKOUT / "KernelBench", root / "KernelBench")
    runs = root / "runs"
    runs.mkdir()
    honest = CHECKOUT / "runs" / "run_a" / "level_1_problem_1_sample_0_kernel.py"
    shutil.copy(honest, runs / "level_1_problem_1_sample_0_kernel.py")
    for sample in (1, 2, 3):  # still in their native check when the signal comes
        (runs / f"level_1_problem_1_sample_{sample}_kernel.py").write_text(
            honest.read_text().replace("return x * 2.0", SLEEPER))
    report = tmp_path / "report.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kdiff.commands.cli", "run", "--bench", "kernelbench", "--root", str(root),
         "--runs", str(runs), "--gates", "ORD-02", "--device", "cpu", "--jobs", "2",
         "--call-timeout", "600", "--store", str(tmp_path / "s.sqlite"), "--json", str(report)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 300
    while not any(line.startswith("[1/4") for line in err) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    interrupted = time.monotonic()
    out = proc.stdout.read()
    proc.wait(timeout=120)
    assert time.monotonic() - interrupted < 30, "the run waited for the judges it interrupted"
    reader.join(timeout=10)
    stderr = "".join(err)
    assert proc.returncode == 3, stderr
    assert "interrupted after 1 of 4 kernels" in stderr and "Traceback" not in stderr, stderr
    assert "native check against verifier" in out
    judged = [k["id"] for k in json.loads(report.read_text())["kernels"]]
    assert len(judged) == 1 and judged[0].endswith("level_1_problem_1_sample_0"), judged
    deadline = time.monotonic() + 10  # the zygotes notice their judges' sockets close
    while named(SLEEPER_NAME) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert named(SLEEPER_NAME) == [], "a worker outlived the interrupted run"


def _worker_of_b_dies(case: Case, config: RunConfig, pm, preset: str, resume=None) -> Verdict:
    """Writes when it judged each case to KDIFF_TEST_JOURNAL; b's worker always dies."""
    from kdiff.data.model import GateResult, Status
    start = time.monotonic()
    time.sleep(1.0 if case.id == "a" else 0.3)  # a is still judged when b's worker dies
    gates = {"ORD-02": GateResult("ORD-02", Status.FAIL, "out_of_memory", "killed")} \
        if case.id == "b" else {}
    with open(os.environ["KDIFF_TEST_JOURNAL"], "a") as f:
        f.write(f"{case.id} {start} {time.monotonic()}\n")
    return Verdict(case, NativeVerdict(case.id != "b", preset), gates)


def test_a_worker_that_dies_beside_others_is_judged_again_alone(tmp_path, monkeypatch):
    """A crash or out-of-memory beside other judges may be a neighbour's doing (the memory
    is the machine's): that case is judged again with nothing beside it, and only that
    verdict is yielded."""
    journal = tmp_path / "journal"
    monkeypatch.setenv("KDIFF_TEST_JOURNAL", str(journal))
    cases = [Case(id=n, problem=tmp_path / "p.py", candidate=tmp_path / f"{n}.py")
             for n in "abc"]
    got = [v.case.id for v in PoolExecutor(2, "cpu").judge(
        cases, _worker_of_b_dies, RunConfig(), plugins.manager(), "kb")]
    assert sorted(got) == ["a", "b", "c"]  # one verdict each
    runs = [(n, float(s), float(e)) for n, s, e in
            (line.split() for line in journal.read_text().splitlines())]
    b_runs = [r for r in runs if r[0] == "b"]
    assert len(b_runs) == 2, runs
    _, start, end = b_runs[-1]
    assert not [r for r in runs if r[0] != "b" and r[1] < end and start < r[2]], runs


def _journal(case: Case) -> None:
    """Writes when the judging of `case` starts and ends to KDIFF_TEST_JOURNAL."""
    with open(os.environ["KDIFF_TEST_JOURNAL"], "a") as f:
        f.write(f"{case.id} start {time.monotonic()}\n")
    time.sleep(1.5 if case.id == "a" else 0.3)  # a is still judged while b's judge breaks
    with open(os.environ["KDIFF_TEST_JOURNAL"], "a") as f:
        f.write(f"{case.id} end {time.monotonic()}\n")


def _runs(journal: Path) -> dict[str, list[list[float]]]:
    """Each case's judgings, [start, end] (end inf where its judge was ended first)."""
    runs: dict[str, list[list[float]]] = {}
    for line in journal.read_text().splitlines():
        name, what, at = line.split()
        if what == "start":
            runs.setdefault(name, []).append([float(at), float("inf")])
        else:
            runs[name][-1][1] = float(at)
    return runs


def _b_breaks_resumably(case: Case, config: RunConfig, pm, preset: str, resume=None) -> Verdict:
    """b's reference breaks its judge's context on a draw the first time (a resumable
    verdict); the fresh judge going on from it finishes."""
    from kdiff.verdicts.judge import device_broken
    _journal(case)
    if case.id == "b" and resume is None:
        verdict = device_broken(Verdict(case, NativeVerdict(None, preset), {}),
                                "CUDA error: device-side assert triggered")
        verdict.resumable, verdict.broken_draws = True, ("draw 3",)
        return verdict
    return Verdict(case, NativeVerdict(True, preset), {})


def _journalled(tmp_path, monkeypatch, jobs: int, judge) -> tuple[dict[str, Verdict], dict]:
    """Cases a, b and c judged by `judge` in `jobs` judges: the verdicts, and the judgings
    that _journal wrote."""
    journal = tmp_path / "journal"
    monkeypatch.setenv("KDIFF_TEST_JOURNAL", str(journal))
    cases = [Case(id=n, problem=tmp_path / "p.py", candidate=tmp_path / f"{n}.py")
             for n in "abc"]
    got = {v.case.id: v for v in PoolExecutor(jobs, "cpu").judge(
        cases, judge, RunConfig(), plugins.manager(), "kb")}
    return got, _runs(journal)


def test_a_broken_context_is_gone_on_from_while_the_other_judges_judge(tmp_path, monkeypatch):
    """The fresh judge of b starts while a is still judged beside it: nothing waits for the
    cases in flight, and a is judged once."""
    got, runs = _journalled(tmp_path, monkeypatch, 3, _b_breaks_resumably)
    assert all(v.error is None and v.native.accept for v in got.values()), got
    assert len(runs["a"]) == 1 and len(runs["b"]) == 2, runs
    assert runs["b"][1][0] < runs["a"][0][1], runs


def _judge_of_b_dies(case: Case, config: RunConfig, pm, preset: str, resume=None) -> Verdict:
    if case.id == "b":
        time.sleep(0.3)
        os._exit(3)
    _journal(case)
    return Verdict(case, NativeVerdict(True, preset), {})


def test_a_dead_judge_leaves_the_case_beside_it_to_finish_once(tmp_path, monkeypatch):
    got, runs = _journalled(tmp_path, monkeypatch, 2, _judge_of_b_dies)
    assert got["b"].error_kind == "judge" and all(got[n].native.accept for n in "ac")
    assert len(runs["a"]) == 1


def test_a_stopped_pool_is_not_woken_again_at_exit():
    """concurrent.futures' exit hook writes to each pool's wake-up pipe, which a stopped pool's
    manager thread closes as it ends: the two raced, and an interrupted run's stderr got an
    "Exception ignored ... Bad file descriptor" traceback. A stopped pool leaves the hook."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import _threads_wakeups

    from kdiff.verdicts.fresh_judges import stop

    pool = ProcessPoolExecutor(1)
    pool.submit(time.sleep, 30)
    manager = pool._executor_manager_thread
    assert manager in _threads_wakeups
    stop(pool)
    assert manager not in _threads_wakeups
    manager.join(30)
