"""Where the judging of a run happens: in this process one case after another, in a pool of N
local judge processes (--jobs N), or on a Ray cluster (--executor ray).

Every executor takes the same `judge` function (JudgeFn: case, config, pm, preset, resume)
and yields verdicts as they finish; the driver (this process) is the only one that writes the results
store. Each judge runs its candidates in confined worker processes of their own (kdiff.sandbox.process),
so N jobs are N judges each with one worker. Locally each judge is a process pool of its own,
replaced alone. A case whose judge died, or whose worker died (a crash, out of memory) beside
other judges, is judged again alone, and only that verdict counts: memory is the machine's, and
a neighbour's may have been what ran out (Ray's tasks are not judged again); the one whose
judge dies alone gets an error row of kind `judge` (never stored: the next run judges it
again). A judge whose CUDA context the reference broke on one gate's draw (a resumable
verdict: the gates before it decided, the draw named) is replaced by a fresh judge that goes
on from there, as long as each goes further (kdiff.verdicts.fresh_judges), while the other
judges go on. Judges die
with the driver (PR_SET_PDEATHSIG), their zygotes and workers with them (kdiff.sandbox.zygote).

Verdicts do not depend on the executor: the same judge function runs on the same files with
the same options; only GateResult.seconds differs. Every judge and worker runs torch with one
intra-op thread whatever the executor (kdiff.data.seeding.one_thread), so the rounding of the oracle's
reductions does not depend on --jobs either.
"""
from __future__ import annotations

import hashlib
import importlib
import multiprocessing
import os
import tempfile
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol

import pluggy

from kdiff.data.cache import cache_root
from kdiff.data.model import Case, Verdict
from kdiff.data.stream import CaseStream, as_stream
from kdiff.judging.interrupts import deferred_sigint
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.fresh_judges import JudgeFn, bind_to, goes_further, judge_died, stop

EXECUTORS = ("local", "ray")
MEMORY_PER_JOB = 2 << 30  # a judge (torch, the oracle) and its worker (torch, Triton)


class Executor(Protocol):
    def judge(self, cases: Iterable[Case] | CaseStream, judge: JudgeFn, config: RunConfig,
              pm: pluggy.PluginManager, preset: str) -> Iterator[Verdict]:
        """Verdicts of `cases`, as they finish; a stream's cases judged as they become
        ready."""


def default_jobs(device: str) -> int:
    """One job per GPU on CUDA; otherwise one per core, as many as memory holds."""
    if device == "cuda":
        import torch
        return max(1, torch.cuda.device_count())
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(1, min(cores or 1, memory // MEMORY_PER_JOB))


def make_executor(name: str, jobs: int, device: str) -> Executor:
    """On CUDA judges run in processes of their own even one at a time: a judge whose CUDA
    context breaks is replaced, and the driver's context is never the one that broke."""
    if name == "ray":
        return RayExecutor(jobs, device)
    if name != "local":
        raise ValueError(f"unknown executor '{name}'; known: {', '.join(EXECUTORS)}")
    return SerialExecutor() if jobs <= 1 and device != "cuda" else PoolExecutor(jobs, device)


# The signatures of a worker's death (kdiff.sandbox.process), which another process's use of memory can
# cause: a case that gets one beside other judges is judged again alone.
WORKER_DEATHS = ("crash", "out_of_memory")


def worker_died(verdict: Verdict) -> bool:
    return (any(g.signature in WORKER_DEATHS for g in verdict.gates.values())
            or (verdict.native.reason or "").startswith(tuple(f"{s}:" for s in WORKER_DEATHS)))


def judge_unusable(verdict: Verdict) -> bool:
    """Whether the judge process that returned `verdict` cannot judge again: its CUDA context
    broke (kdiff.verdicts.judge.device_broken). An undecided case is judged again in a fresh
    judge."""
    return verdict.judge_broken


def broke_undecided(verdict: Verdict) -> bool:
    """Whether the judge's CUDA context broke before anything was decided: the case is
    judged again in a fresh judge (a verdict decided before the break stands)."""
    return verdict.judge_broken and verdict.error is not None


class SerialExecutor:
    def judge(self, cases: Iterable[Case] | CaseStream, judge: JudgeFn, config: RunConfig,
              pm: pluggy.PluginManager, preset: str) -> Iterator[Verdict]:
        for case in cases:
            yield judge(case, config, pm, preset)


# -- local processes ----------------------------------------------------------------------
# State of one judge process: the judge and its arguments, set once by the initializer.
_SLOT: tuple[JudgeFn, RunConfig, pluggy.PluginManager | None, str] | None = None


def _slot_init(judge: JudgeFn, config: RunConfig, pm: pluggy.PluginManager | None,
               preset: str, gpu: str | None, driver: int) -> None:
    global _SLOT
    bind_to(driver)
    if gpu is not None:  # one GPU per judge; its candidates' workers inherit the choice
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    _SLOT = (judge, config, pm, preset)


def _slot_warm() -> None:
    """A judge's imports (its gates and adapters), made while the cases are still being made:
    spawned judges start in seconds each (14 at once took 23 s on an H100)."""
    from kdiff.judging.plugins import manager
    manager()


def _slot_judge(case: Case, resume: Verdict | None = None) -> Verdict:
    assert _SLOT is not None
    judge, config, pm, preset = _SLOT
    if pm is None:
        from kdiff.judging.plugins import manager
        pm = manager()
    return judge(case, config, pm, preset, resume=resume)


# What every judge imports at its first case, not before: the first operation under a Python
# dispatch mode (the oracle's tracer, provenance's) passes torch's `_disable_dynamo`, which
# imports torch._dynamo, and sympy with it: 1 CPU s a judge. Imported before a CPU judge is
# forked, once for all of them, as torch and the gates are.
JUDGES_FIRST_IMPORTS = ("torch._dynamo",)


def keep_torch_cache_in_kdiffs() -> None:
    """Points torch's compile cache, unless the user named one, into kdiff's cache for this
    process and the judges it starts: importing torch._dynamo makes that folder at once, by
    default `torchinductor_<user>` in the temporary folder, which a run would otherwise
    leave behind in the user's TMPDIR."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache_root() / "torchinductor"))


class PoolExecutor:
    """N judge processes, each a pool of one, so that one judge is replaced while the others
    go on: a judge that dies costs only its own case, and a judge whose CUDA context broke
    hands its case to a fresh judge at once (a context is its process's alone). On the CPU
    they are forked (the plugin manager, torch and the gates are inherited, nothing is
    imported again); on CUDA they are spawned, since a forked CUDA context is unusable, and
    each is given one GPU."""

    def __init__(self, jobs: int, device: str) -> None:
        self.jobs, self.device = jobs, device

    def _judge_process(self, judge: JudgeFn, config: RunConfig, pm: pluggy.PluginManager,
                       preset: str, gpu: str | None) -> ProcessPoolExecutor:
        keep_torch_cache_in_kdiffs()
        if self.device == "cuda":
            return ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_slot_init,
                                       initargs=(judge, config, None, preset, gpu, os.getpid()))
        for name in JUDGES_FIRST_IMPORTS:
            importlib.import_module(name)
        return ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_slot_init,
                                   initargs=(judge, config, pm, preset, None, os.getpid()))

    def judge(self, cases: Iterable[Case] | CaseStream, judge: JudgeFn, config: RunConfig,
              pm: pluggy.PluginManager, preset: str) -> Iterator[Verdict]:
        gpus = _visible_gpus() if self.device == "cuda" else [None]
        judges: list[ProcessPoolExecutor | None] = [None] * self.jobs

        def start(slot: int) -> ProcessPoolExecutor:
            if judges[slot] is None:
                judges[slot] = self._judge_process(judge, config, pm, preset,
                                                   gpus[slot % len(gpus)])
            return judges[slot]

        def replace(slot: int) -> None:
            """The judge in `slot` cannot judge again: the next case there gets a fresh one."""
            stop(judges[slot])
            judges[slot] = None

        source = as_stream(cases)
        if self.device == "cuda" and not source.complete:
            for slot in range(self.jobs):  # started beside the producer, before its first case
                start(slot).submit(_slot_warm)
        finished = False
        try:
            with deferred_sigint() as interrupted:
                yield from self._judge(source, start, replace, preset, interrupted)
            finished = True
        finally:
            pools = [pool for pool in judges if pool is not None]
            if finished:
                # Idle judges leave as a pool's processes do, cleaning up (their workers, a
                # CUDA context each), all at once so that their exits overlap, not add up.
                leaving = [threading.Thread(target=pool.shutdown) for pool in pools]
                for thread in leaving:
                    thread.start()
                for thread in leaving:
                    thread.join()
            else:  # an interrupt, or the caller stopped reading: at once
                for pool in pools:
                    stop(pool)

    def _judge(self, source: CaseStream, start: Callable[[int], ProcessPoolExecutor],
               replace: Callable[[int], None], preset: str,
               interrupted: threading.Event) -> Iterator[Verdict]:
        queue: list[Case] = []  # the next case last
        # A forked judge would inherit the locks the producer's threads hold, not the
        # threads: on the CPU every case is ready before the first judge starts.
        while self.device != "cuda" and source.producing and not source.complete:
            queue[:0] = reversed(source.take(0.5))
            if interrupted.is_set():
                raise KeyboardInterrupt
        # A case whose worker died (a crash, out of memory) beside other judges may have met a
        # neighbour's doing (the memory is the machine's), and a case whose judge died may
        # have met anything: it is judged again with nothing beside it, once the cases in
        # flight finish, and only that verdict counts; the one whose judge dies alone gets the
        # error row. A judge whose CUDA context broke is replaced: where the reference broke
        # it on a draw (resumable) a fresh judge goes on from its verdict as soon as one is
        # free; otherwise the case is judged again alone, and its verdict counts whatever it
        # says.
        suspects: list[Case] = []
        resumes: dict[str, Verdict] = {}  # case id -> the resumable verdict to go on from
        running: dict[Future[Verdict], tuple[Case, int]] = {}
        beside: set[str] = set()  # ids of the cases in flight while another one was
        alone: Case | None = None

        def submit(case: Case, slot: int) -> None:
            if running:
                beside.update({case.id, *(c.id for c, _ in running.values())})
            running[start(slot).submit(_slot_judge, case, resumes.get(case.id))] = (case, slot)

        while queue or suspects or running or not source.complete:
            free = sorted(set(range(self.jobs)) - {slot for _, slot in running.values()})
            if free and not queue and not source.complete:
                # new cases go after those waiting; with no case in flight, wait for one
                queue[:0] = reversed(source.take(0.0 if running or suspects else 0.5))
            if alone is None and suspects and not running:
                alone = suspects.pop()
                submit(alone, free[0])
            while alone is None and not suspects and queue and free:
                submit(queue.pop(), free.pop(0))
            done, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
            if interrupted.is_set():
                raise KeyboardInterrupt
            for future in done:
                case, slot = running.pop(future)
                was_alone, alone = case is alone, (None if case is alone else alone)
                beside_others = case.id in beside
                beside.discard(case.id)
                try:
                    verdict = future.result()
                except BrokenProcessPool as exc:
                    replace(slot)
                    if was_alone:
                        yield judge_died(case, preset, str(exc) or "its process ended")
                    else:
                        suspects.append(case)  # a judge's death may be passing: once more
                    continue
                except Exception as exc:  # noqa: BLE001 - the judge itself raised
                    yield judge_died(case, preset, f"{type(exc).__name__}: {exc}")
                    continue
                if judge_unusable(verdict):
                    replace(slot)
                if goes_further(verdict, resumes.get(case.id)):
                    resumes[case.id] = verdict
                    queue.append(case)  # on from there, in a fresh judge, next
                elif ((broke_undecided(verdict) and not was_alone)
                      or (worker_died(verdict) and beside_others)):
                    suspects.append(case)  # again, alone
                else:
                    yield verdict


def _visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES names them."""
    named = os.environ.get("CUDA_VISIBLE_DEVICES")
    if named:
        return [g.strip() for g in named.split(",") if g.strip()]
    import torch
    return [str(i) for i in range(max(1, torch.cuda.device_count()))]


# -- Ray ----------------------------------------------------------------------------------
def _materialize(case: Case, files: dict[str, tuple[str, bytes]]) -> tuple[Case, str | None]:
    """The case as this node can judge it: in place when the node sees the same files (a
    shared file system), else from copies of their contents in a temporary folder."""
    import dataclasses
    if all(Path(p).is_file() and hashlib.sha256(Path(p).read_bytes()).hexdigest() == sha
           for p, (sha, _) in files.items()):
        return case, None
    folder = tempfile.mkdtemp(prefix="kdiff-ray-")
    moved = {}
    for i, (p, (_, data)) in enumerate(files.items()):
        target = Path(folder) / str(i) / Path(p).name
        target.parent.mkdir()
        target.write_bytes(data)
        moved[p] = target
    return dataclasses.replace(case, problem=moved[str(case.problem)],
                               candidate=moved[str(case.candidate)]), folder


def _ray_judge(case: Case, files: dict[str, tuple[str, bytes]], judge: JudgeFn,
               config: RunConfig, preset: str, resume: Verdict | None = None) -> Verdict:
    import shutil

    from kdiff.judging.plugins import manager
    local, folder = _materialize(case, files)
    try:
        verdict = judge(local, config, manager(), preset, resume=resume)
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    verdict.case = case
    return verdict


class RayExecutor:
    """One Ray task per case (one GPU each where the run is on CUDA); the driver gathers the
    verdicts. Connects to the cluster named by RAY_ADDRESS, or starts a local instance with
    `jobs` CPUs. Nodes need kdiff installed; the case files travel with the task."""

    def __init__(self, jobs: int, device: str) -> None:
        self.jobs, self.device = jobs, device

    def judge(self, cases: Iterable[Case] | CaseStream, judge: JudgeFn, config: RunConfig,
              pm: pluggy.PluginManager, preset: str) -> Iterator[Verdict]:
        import ray
        if not ray.is_initialized():
            if os.environ.get("RAY_ADDRESS"):
                ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=False)
            else:
                ray.init(num_cpus=self.jobs, num_gpus=None if self.device == "cuda" else 0,
                         include_dashboard=False, log_to_driver=False)
        # One task per worker process on CUDA (Ray's default for GPU tasks, stated here since
        # it is what keeps a broken CUDA context from the next case).
        task = ray.remote(num_cpus=1, num_gpus=1 if self.device == "cuda" else 0,
                          max_retries=1, max_calls=1 if self.device == "cuda" else 0
                          )(_ray_judge)
        # case, its files, whether judged again already, the resumable verdict it goes on from
        pending: dict[Any, tuple[Case, dict[str, tuple[str, bytes]], bool, Verdict | None]] = {}
        for case in cases:
            files = {}
            for p in (case.problem, case.candidate):
                data = Path(p).read_bytes() if Path(p).is_file() else b""
                files[str(p)] = (hashlib.sha256(data).hexdigest(), data)
            pending[task.remote(case, files, judge, config, preset, None)] = (case, files, False,
                                                                              None)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                case, files, again, before = pending.pop(ref)
                try:
                    verdict = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - the task's process died twice
                    yield judge_died(case, preset, f"{type(exc).__name__}: {exc}")
                    continue
                if goes_further(verdict, before):  # on from there, in a fresh process
                    pending[task.remote(case, files, judge, config, preset, verdict)] = (
                        case, files, again, verdict)
                elif broke_undecided(verdict) and not again:  # once more, in a fresh process
                    pending[task.remote(case, files, judge, config, preset, None)] = (
                        case, files, True, None)
                else:
                    yield verdict
