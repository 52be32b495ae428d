"""Judging one configuration: a copy of the candidate with that configuration, through kdiff's
gates (kdiff.verdicts.judge.judge_case: its own confined worker), the verdict cached per
configuration.

Several threads may judge at once where the ConfigJudge has judge processes of its own
(`judges` > 1): judge_case is not for threads of one process (it seeds torch's global
generators, patches torch.manual_seed while it learns the inputs, keeps one zygote and one
folder per process, and a zygote started from a thread dies with that thread), so each
configuration is judged in one of up to `judges` spawned judge processes, as `kdiff run
--jobs N` judges cases. The cache and the configured copies are shared safely: one judgement
per cache key at a time (a second caller waits for it), and each copy is written once,
atomically (a timing process may read it while another thread asks for it).
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kdiff.data.model import TRANSIENT_ERROR_KIND, Case, Status, Verdict
from kdiff.judging.runconfig import RunConfig
from kdiff.tune.result import Judgement, Outcome
from kdiff.tune.space import Config, Space, configured_source

JudgeFn = Callable[[Config], Judgement]


def judgement_of(verdict: Verdict, seconds: float) -> Judgement:
    """A failed gate rejects; a gate that errored leaves it undecided (neither trusted nor
    timed as a win); a candidate that does not load is rejected (its failure, not kdiff's)."""
    if verdict.error:
        outcome = Outcome.WRONG if verdict.error_kind == "candidate" else Outcome.UNDECIDED
        return Judgement(outcome, (f"load:{verdict.error.splitlines()[0]}",), seconds)
    failing = tuple(f"{gid}:{g.signature or g.status.value}" for gid, g in verdict.gates.items()
                    if g.status in (Status.FAIL, Status.ERROR))
    accept = verdict.verifier_accept
    outcome = {True: Outcome.CORRECT, False: Outcome.WRONG, None: Outcome.UNDECIDED}[accept]
    return Judgement(outcome, failing, seconds)


def _serve(conn: Any, config: RunConfig, preset: str | None) -> None:
    """A judge process: judge_case on each case it receives, until its pipe closes. It is
    started from a search's thread, so it does not die with its parent's thread
    (PR_SET_PDEATHSIG would end it with the batch); it leaves when the pipe closes (its
    parent ended or closed it) and, as a daemon, when its parent exits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the search stops its judges itself
    from kdiff.judging.plugins import manager
    from kdiff.verdicts.judge import judge_case
    pm = manager()
    while True:
        try:
            case = conn.recv()
        except EOFError:
            return
        try:
            verdict = judge_case(case, config, pm, preset)
        except Exception as exc:  # noqa: BLE001 - kdiff's own error, raised in the caller
            conn.send((False, f"{type(exc).__name__}: {exc}"))
            continue
        conn.send((True, verdict))
        if verdict.judge_broken:
            return  # its CUDA context broke: nothing more can be judged here


@dataclass(eq=False)
class _Slot:
    process: Any  # multiprocessing's SpawnProcess
    conn: Any     # its end of the pipe


class JudgeProcesses:
    """Up to `size` judge processes, started when first needed, each judging one case at a
    time; a caller takes an idle one (or waits for one). Spawned, never forked: the caller
    has threads, and on CUDA a forked context is unusable. A process that died or whose CUDA
    context broke is replaced by a fresh one at the next case."""

    def __init__(self, size: int, config: RunConfig, preset: str | None) -> None:
        self.size, self.config, self.preset = size, config, preset
        self._context = multiprocessing.get_context("spawn")
        self._cond = threading.Condition()
        self._idle: list[_Slot] = []
        self._live: set[_Slot] = set()

    def _take(self) -> _Slot:
        with self._cond:
            self._cond.wait_for(lambda: self._idle or len(self._live) < self.size)
            while self._idle:
                slot = self._idle.pop()
                if slot.process.is_alive():
                    return slot
                self._retire(slot)  # died idle: replaced below
            ours, theirs = self._context.Pipe()
            process = self._context.Process(target=_serve, args=(theirs, self.config,
                                                                 self.preset),
                                            name="kdiff-tune-judge", daemon=True)
            process.start()
            theirs.close()
            slot = _Slot(process, ours)
            self._live.add(slot)
            return slot

    def _give_back(self, slot: _Slot, usable: bool) -> None:
        with self._cond:
            if usable and slot in self._live:
                self._idle.append(slot)
            else:
                self._retire(slot)
            self._cond.notify()

    def _retire(self, slot: _Slot) -> None:
        self._live.discard(slot)
        if slot in self._idle:
            self._idle.remove(slot)
        slot.conn.close()
        if slot.process.is_alive():
            slot.process.terminate()

    def judge(self, case: Case) -> Verdict | None:
        """The case's verdict; None where its judge process died before answering."""
        slot = self._take()
        try:
            slot.conn.send(case)
            ok, answer = slot.conn.recv()
        except (EOFError, OSError):
            self._give_back(slot, False)
            return None
        except BaseException:
            self._give_back(slot, False)  # interrupted mid-case: its answer would be stale
            raise
        if not ok:
            self._give_back(slot, True)
            raise RuntimeError(f"the judge process raised {answer}")
        self._give_back(slot, not answer.judge_broken)
        return answer

    def stop(self) -> None:
        """End every judge process now (an interrupted search): the callers waiting on one
        get None; later cases start fresh ones."""
        with self._cond:
            for slot in list(self._live):
                if slot in self._idle:
                    self._retire(slot)
                elif slot.process.is_alive():
                    slot.process.terminate()  # its caller retires it
            self._cond.notify_all()

    def close(self) -> None:
        """Let the idle processes leave (their pipes close), and end the others."""
        with self._cond:
            for slot in list(self._live):
                self._retire(slot)
            self._cond.notify_all()


class ConfigJudge:
    """judge(config): the configured candidate's verdict under `config`'s gates. Verdicts are
    cached by the knobs that can change an output: on the CPU the interpreter ignores launch
    options (num_warps, num_stages), so configurations differing only there share one."""

    def __init__(self, problem: Path, candidate: Path, space: Space, config: RunConfig,
                 workdir: Path | None = None, judges: int = 1) -> None:
        """workdir: where the configured copies are written (default: a new temporary folder,
        left for the caller to inspect). judges: how many configurations may be judged at
        once; 1 judges in this process, from its main thread only (as before); more judges
        each in one of up to that many judge processes, from as many threads. close() ends
        those processes."""
        from kdiff.judging.plugins import manager
        if judges < 1:
            raise ValueError("judges: at least 1")
        self.problem, self.candidate, self.space, self.config = problem, candidate, space, config
        self.source = Path(candidate).read_text()
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="kdiff-tune-"))
        self.pm = manager()
        self.cache: dict[Config, Judgement] = {}
        self.ignored = ({k.name for k in space.knobs if k.launch_option}
                        if config.device == "cpu" else set())
        self.judges = judges
        self._processes: JudgeProcesses | None = None
        if judges > 1:
            from kdiff.verdicts.judge import native_preset
            self._processes = JudgeProcesses(judges, config, native_preset(self.pm, config))
        self._lock = threading.Lock()
        self._pending: dict[Config, Future[Judgement]] = {}

    def key(self, config: Config) -> Config:
        return tuple((n, v) for n, v in config if n not in self.ignored)

    def write(self, config: Config) -> Path:
        """The candidate under `config`, as a file of its own (named by the configuration).
        Written once, atomically: the name is its content's digest, so a file already there
        is this one, and a reader never sees it half written."""
        text = configured_source(self.source, config)
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        path = self.workdir / f"{Path(self.candidate).stem}_{digest}.py"
        if not path.exists():
            partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
            partial.write_text(text)
            os.replace(partial, path)
        return path

    def __call__(self, config: Config) -> Judgement:
        key = self.key(config)
        with self._lock:
            if key in self.cache:
                return self.cache[key]
            pending = self._pending.get(key)
            ours = pending is None
            if ours:
                pending = self._pending[key] = Future()
        if not ours:
            return pending.result()  # judged by another thread right now: its verdict
        try:
            judgement, keep = self._judge(config)
        except BaseException as exc:
            with self._lock:
                del self._pending[key]
            pending.set_exception(exc)
            raise
        with self._lock:
            if keep:
                self.cache[key] = judgement
            del self._pending[key]
        pending.set_result(judgement)
        return judgement

    def _judge(self, config: Config) -> tuple[Judgement, bool]:
        """The judgement, and whether to cache it (a judge process that died says nothing
        about the configuration)."""
        if self._processes is None and threading.current_thread() is not threading.main_thread():
            raise RuntimeError("ConfigJudge(judges=1) judges in this process, from its main "
                               "thread only; judges > 1 for several threads")
        path = self.write(config)
        case = Case(id=f"{Path(self.problem).stem}::{path.stem}", problem=Path(self.problem),
                    candidate=path)
        from kdiff.verdicts.fresh_judges import judged_on
        from kdiff.verdicts.judge import judge_case, native_preset
        start = time.perf_counter()
        answer = (judge_case(case, self.config, self.pm) if self._processes is None
                  else self._processes.judge(case))
        if answer is not None and answer.resumable:  # the reference broke that judge's context
            answer = judged_on(case, answer, judge_case, self.config,
                               native_preset(self.pm, self.config))
        seconds = time.perf_counter() - start
        if answer is None:
            return Judgement(Outcome.UNDECIDED, ("judge:its process died",), seconds), False
        return judgement_of(answer, seconds), answer.error_kind != TRANSIENT_ERROR_KIND

    def stop(self) -> None:
        """End the judge processes' cases now (an interrupted search); they start again."""
        if self._processes is not None:
            self._processes.stop()

    def close(self) -> None:
        if self._processes is not None:
            self._processes.close()

    def __enter__(self) -> ConfigJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
