"""Cases as they become ready: a stream hands them over as its producer makes them, the
judges start on the first, and the reports keep the listing's order."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from kdiff.commands.executor import PoolExecutor, SerialExecutor
from kdiff.data.model import Case, GateResult, NativeVerdict, Status, Verdict
from kdiff.data.stream import CaseStream
from kdiff.judging import plugins
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.store import ResultsStore, judge_resuming


def _cases(tmp_path: Path, names: str) -> list[Case]:
    problem = tmp_path / "p.py"
    problem.write_text("# problem\n")
    out = []
    for n in names:
        (tmp_path / f"{n}.py").write_text(f"# candidate {n}\n")
        out.append(Case(id=n, problem=problem, candidate=tmp_path / f"{n}.py"))
    return out


def _accepts(case: Case, config: RunConfig, pm, preset: str, resume=None) -> Verdict:
    return Verdict(case, NativeVerdict(True, preset),
                   {g: GateResult(g, Status.PASS) for g in config.gates or ["ORD-02"]})


def test_a_list_is_a_stream_whose_cases_are_all_ready(tmp_path):
    cases = _cases(tmp_path, "abc")
    stream = CaseStream.of(cases)
    assert stream.finished and not stream.complete and len(stream) == 3
    assert stream.take() == cases and stream.complete
    assert stream.take(None) == [] and list(stream) == []
    assert stream.listed() == cases


def test_a_produced_stream_hands_each_case_over_as_it_is_made(tmp_path):
    a, b, c = _cases(tmp_path, "abc")
    more = threading.Event()

    def produce(stream: CaseStream) -> None:
        stream.put(c)
        more.wait(30)
        stream.put(b)
        stream.put(a)

    stream = CaseStream.produced(["a", "b", "c"], produce)
    assert stream.take(10) == [c]
    assert stream.take(0.05) == [] and not stream.finished
    with pytest.raises(RuntimeError, match="not all known"):
        stream.listed()
    more.set()
    assert list(stream) == [b, a] and stream.complete
    assert stream.listed() == [a, b, c]  # the listing's order, not the making's


def test_a_producer_that_raises_raises_in_the_consumer(tmp_path):
    def produce(stream: CaseStream) -> None:
        raise OSError("the gold folder went away")

    with pytest.raises(OSError, match="went away"):
        list(CaseStream.produced(["a"], produce))


def test_routed_keeps_back_the_cases_route_drops(tmp_path):
    cases = _cases(tmp_path, "abc")
    kept: list[str] = []

    def route(case: Case) -> Case | None:
        if case.id == "b":
            kept.append(case.id)
            return None
        return case

    routed = CaseStream.of(cases).routed(route)
    assert [c.id for c in routed] == ["a", "c"] and kept == ["b"]
    assert routed.complete and [c.id for c in routed.listed()] == ["a", "b", "c"]


def test_a_pool_judges_the_first_case_before_the_stream_ends(tmp_path):
    """The judges do not wait for the last case (TritonBench: the last gold test's
    recording) before starting on the first."""
    a, b = _cases(tmp_path, "ab")
    stream = CaseStream(["a", "b"])
    stream.put(a)
    # Only if the pool waited for every case would this guard be what ends the stream.
    guard = threading.Timer(60, lambda: (stream.put(b), stream.end()))
    guard.start()
    try:
        verdicts = PoolExecutor(2, "cpu").judge(stream, _accepts, RunConfig(),
                                                plugins.manager(), "kb")
        first = next(verdicts)
        ended_first = stream.finished
        if not ended_first:
            stream.put(b)
            stream.end()
        rest = [v.case.id for v in verdicts]
    finally:
        guard.cancel()
    assert first.case.id == "a" and not ended_first
    assert rest == ["b"]


def test_resuming_a_stream_judges_only_what_the_store_lacks(tmp_path):
    cases = _cases(tmp_path, "abc")
    config = RunConfig(gates=["ORD-02"])
    asked: list[list[str]] = []

    def judge_all(todo, cfg):
        todo = list(todo)
        asked.append([c.id for c in todo])
        return SerialExecutor().judge(todo, _accepts, cfg, plugins.manager(), "kb")

    with ResultsStore(tmp_path / "s.sqlite") as store:
        store.put(cases[1], config, "kb", _accepts(cases[1], config, None, "kb"))
        produced = CaseStream.produced("abc", lambda s: [s.put(c) for c in reversed(cases)])
        got = [v.case.id for v in judge_resuming(store, produced, config, "kb", ["ORD-02"],
                                                judge_all)]
    assert asked == [["c", "a"]] and sorted(got) == ["a", "b", "c"]


def test_spawned_judges_start_while_the_producer_still_makes_cases(tmp_path):
    """On CUDA the judges are spawned, so nothing stops them from starting beside the
    producer's threads (TritonBench's recordings): the first verdict comes before the last
    case is made. (Forked judges, on the CPU, wait for every case: a fork copies the locks
    the producer's threads hold.)"""
    a, b = _cases(tmp_path, "ab")
    more = threading.Event()

    def produce(stream: CaseStream) -> None:
        stream.put(a)
        more.wait(90)  # the guard, should the judges wait for every case
        stream.put(b)

    stream = CaseStream.produced(["a", "b"], produce)
    verdicts = PoolExecutor(2, "cuda").judge(stream, _accepts, RunConfig(), None, "kb")
    try:
        first = next(verdicts)
        made_all_first = stream.finished
    finally:
        more.set()
    assert first.case.id == "a" and not made_all_first
    assert [v.case.id for v in verdicts] == ["b"]


def _spawned_judges() -> int:
    """Processes this one has spawned through multiprocessing (the CUDA path's judges)."""
    count = 0
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(b")", 1)[1].split()[1]) == os.getpid() and b"spawn_main" in cmdline:
            count += 1
    return count


def test_spawned_judges_start_before_the_first_case_is_made(tmp_path):
    """On CUDA every judge starts (spawned, its imports made) while the producer is still
    making its first case: TritonBench's first gold test takes seconds to record."""
    [a] = _cases(tmp_path, "a")
    seen = []

    def produce(stream: CaseStream) -> None:
        give_up = time.monotonic() + 30  # the guard, should no judge start before a case
        while _spawned_judges() < 2 and time.monotonic() < give_up:
            time.sleep(0.05)
        seen.append(_spawned_judges())
        stream.put(a)

    stream = CaseStream.produced(["a"], produce)
    verdicts = PoolExecutor(2, "cuda").judge(stream, _accepts, RunConfig(), None, "kb")
    assert [v.case.id for v in verdicts] == ["a"]
    assert seen == [2]


def test_closing_a_stream_cancels_the_work_not_yet_started(tmp_path):
    """An interrupted run does not wait for every pending recording (TritonBench's
    discovery cancels its pool's queue the same way)."""
    from concurrent.futures import ThreadPoolExecutor

    from kdiff.data.stream import finished

    started: list[int] = []
    release, registered = threading.Event(), threading.Event()

    def work(i: int) -> int:
        started.append(i)
        release.wait(30)
        return i

    def produce(stream: CaseStream) -> None:
        with ThreadPoolExecutor(1) as pool:
            futures = [pool.submit(work, i) for i in range(50)]
            stream.on_close(lambda: pool.shutdown(wait=False, cancel_futures=True))
            registered.set()
            for _ in finished(futures):
                stream.put(_cases(tmp_path, "a")[0])

    stream = CaseStream.produced(["a"], produce)
    # closed once the producer can cancel: closed before, its pool would run the queue
    # (released below) until it got there, as many as a loaded machine lets it
    assert registered.wait(30)
    while not started:
        threading.Event().wait(0.01)
    stream.close()
    release.set()
    stream._thread.join(30)
    assert not stream.producing and started == [0]
