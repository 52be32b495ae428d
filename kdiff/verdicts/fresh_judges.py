"""Judge processes of their own, and going on in fresh ones from a resumable verdict.

A judge whose CUDA context the reference broke on one draw returns a resumable verdict
(kdiff.verdicts.judge.judge_case): that context refuses everything after, so another process
goes on from there, and again while each goes further. The pool and Ray executors
(kdiff.commands.executor) do this with their own processes; `judged_on` does it for a caller
that judged in its own process (`kdiff verify`, `kdiff tune`).
"""
from __future__ import annotations

import concurrent.futures.process as futures_process
import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

import pluggy

from kdiff.data.model import TRANSIENT_ERROR_KIND, Case, NativeVerdict, Verdict
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.confine import die_with
from kdiff.verdicts.judge import decided


class JudgeFn(Protocol):
    """What every judge process runs (kdiff.verdicts.judge.judge_case's signature, and
    kdiff.commands.run.judge_one's): `resume`, a resumable verdict of the case, to go on
    from."""

    def __call__(self, case: Case, config: RunConfig, pm: pluggy.PluginManager, preset: str,
                 *, resume: Verdict | None = None) -> Verdict: ...


def goes_further(verdict: Verdict, before: Verdict | None) -> bool:
    """Whether a fresh judge is to go on from `verdict` (resumable), which decided more gates,
    or named more draws to leave out, than the verdict it went on from."""
    def progress(v: Verdict) -> int:
        return len(decided(v)) + len(v.broken_draws)
    return verdict.resumable and (before is None or progress(verdict) > progress(before))


def judge_died(case: Case, preset: str, why: str) -> Verdict:
    message = f"kdiff's judge process died: {why}".splitlines()[0]
    return Verdict(case, NativeVerdict(None, preset, reason=message), {}, error=message,
                   error_kind=TRANSIENT_ERROR_KIND)


def bind_to(parent: int) -> None:
    """In a judge process: die with `parent` (a judge never outlives it, even after a kill -9),
    and leave Ctrl-C to it: it reaches the whole process group, and the parent alone decides
    what happens next and stops its judges itself."""
    if not die_with(parent):
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def stop(pool: ProcessPoolExecutor) -> None:
    """End a pool's judges now: their cases are not reported, and their workers leave when the
    judge's socket closes. (ProcessPoolExecutor has no public terminate before 3.14.)"""
    manager = pool._executor_manager_thread
    for process in list((pool._processes or {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    # At exit, concurrent.futures wakes every pool's manager thread through a pipe that the
    # thread closes as it ends; it checks the pipe is open, then writes, and a stopped pool's
    # thread could close it in between ("Exception ignored ... Bad file descriptor" on an
    # interrupted run's stderr). This pool was woken by its shutdown: no wake at exit.
    # (A private table of concurrent.futures: where a Python has none, there is nothing to do.)
    if manager is not None:
        getattr(futures_process, "_threads_wakeups", {}).pop(manager, None)


def _judge_fresh(judge: JudgeFn, case: Case, config: RunConfig, preset: str,
                 resume: Verdict) -> Verdict:
    from kdiff.judging.plugins import manager
    return judge(case, config, manager(), preset, resume=resume)


def judged_on(case: Case, verdict: Verdict, judge: JudgeFn, config: RunConfig,
              preset: str) -> Verdict:
    """`verdict` (of a judge in this process) gone on from in fresh judge processes while it
    is resumable and each goes further. They are spawned: this process's CUDA context is the
    broken one, and a forked context is unusable."""
    before = None
    while goes_further(verdict, before):
        before = verdict
        pool: Any = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=bind_to, initargs=(os.getpid(),))
        with pool:
            try:
                verdict = pool.submit(_judge_fresh, judge, case, config, preset, before).result()
            except BrokenProcessPool as exc:
                return judge_died(case, preset, str(exc) or "pool broken")
            except KeyboardInterrupt:
                stop(pool)
                raise
    return verdict
