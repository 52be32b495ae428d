"""The judge's handle on a candidate's worker process.

The worker (kdiff.sandbox.worker's loop) runs in a process of its own, in its own session, talking
over two private pipes; its stdout and stderr go to a log file so that whatever the candidate
prints cannot corrupt the protocol. It is forked from a warm zygote that has imported torch
(kdiff.sandbox.zygote), or started cold (`python -m kdiff.sandbox.confine SPEC -- python -m kdiff.sandbox.zygote
worker R W`) when that is off or unavailable. Every request has a deadline, and the whole case
a wall budget; a worker that misses one is killed with its whole process group and restarted
on the next request, replaying the instances built so far.

The worker starts confined (kdiff.sandbox.confine): a private temporary folder (under its judge's
folder, judge_folder) as its working directory, TMPDIR and compiler caches; an environment
made from an allow-list (kdiff.sandbox.workerenv: no secret of the judge's, nothing that says kdiff);
a file-size cap and, on the CPU, an address-space cap. For a judge running as root (CI, the
H200), on every device, the CUDA driver included: cgroups of its own, with a memory limit that counts shared
memory and memfd files (the kernel's out-of-memory killer takes the worker at its own limit,
never a neighbour; the failure is `out_of_memory`) and a task cap, through which the judge
kills every process the worker started, detached or not; an unprivileged uid of its own
(writes only in its own folder and in the folders anyone may write, which are cleaned when
it ends; no signal or ptrace to another uid); a seccomp filter (no ptrace or access to other
processes' memory, no IP sockets, no new namespaces, no io_uring, BPF or perf events). On the
CPU also a PID and a network namespace and Landlock write, network and signal rules (for a
judge that is not root: user, PID and network namespaces, Landlock, and the address-space and
task rlimits in place of the cgroups and the uid). Every process dies with its parent: a worker with its
zygote or judge, a zygote with its judge (not with its base, the judge's process that
imported torch for its zygotes), a base and a pool judge with theirs (`kill -9` of the run leaves nothing
behind; a zygote removes its judge's folder and cgroups as it dies, and a judge that starts
removes those of judges gone without a zygote). What is contained and what is not:
- contained: crashes, hangs, memory bombs (shared memory included, where cgroups exist), fork
  bombs, huge or malicious replies (read as checked tensor files or with weights_only, under
  a size cap), writes outside its own folder (the results store, other candidates' files,
  the judge's reports), signals
  to and ptrace of the judge or other workers (and reads of their /proc/<pid>/environ), TCP
  connections, UDP (the network namespace, and under the uid the filter: no IP socket),
  the Ray cluster's sockets and variables under `--executor ray`, processes left behind;
- not contained: reads (a candidate can read any file the judge can, including the store and
  other candidates); CPU time it burns before its deadline; disk space inside its own folder
  (and, under the uid, in /tmp, /var/tmp and /dev/shm until it ends); abstract Unix sockets
  and path-named ones anyone may write, where Landlock is not in force (CUDA); for a judge
  that is not root, shared memory (not counted by the address-space cap), UDP where the
  kernel grants no network namespace, and path-named Unix sockets of the judge's own user,
  the Ray raylet's included. Compiler
  children (RES-02's, kdiff.sandbox.launches) are confined as workers are, but those of one
  call share one cgroup, and one killed for memory is not named `out_of_memory`. On CUDA,
  device memory is capped only by the caching allocator's per-process fraction
  (SandboxLimits.gpu_memory_fraction), which the candidate's own code can lift, and the GPU
  is shared with the judge's oracle; CUDA workers run without the namespaces and
  Landlock (either one alone made the driver fail, error 304, on the H200 host).
  `containment` lists what was in force for each worker.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable

from kdiff.data.cache import private_root
from kdiff.sandbox import protocol
from kdiff.sandbox.arena import ARENA_BYTES, InputArena
from kdiff.sandbox.confine import (
    CONTAINMENT_LINE,
    Confinement,
    WorkerCgroup,
    judge_tag,
    landlock_abi,
    reads_need_capability,
    remove_orphaned_files,
    remove_stale_judges,
)
from kdiff.sandbox.launches import (
    COMPILE_TIMEOUT_S,
    JudgesModules,
    Launch,
    Outcomes,
    compile_launches,
    compiler_environment,
)
from kdiff.sandbox.runnable import (
    STALL_SHARE,
    STALL_WATCH_AFTER_S,
    STALL_WATCH_SHARE,
    RunnableReading,
    process_group,
    runnable_seconds,
)
from kdiff.sandbox.visibility import close_to_other_processes
from kdiff.sandbox.workerenv import confined_environment
from kdiff.sandbox.zygote import ForkedWorker, Zygote, ZygoteBase, ZygoteUnavailable

_JUDGE_FOLDERS: dict[int, Path] = {}


# The key under which a `call` reply carries the inputs as the judge read them from the arena
# after the call (a worker's own key of that name is dropped first).
JUDGE_READ_INPUTS = "inputs_read_by_judge"


def judge_folder() -> Path:
    """This judge process's folder, where its workers' folders and logs are made; its
    zygote removes it when this process dies (kdiff.sandbox.confine.remove_leftovers)."""
    pid = os.getpid()
    if pid not in _JUDGE_FOLDERS:
        # Before its first worker: a worker of its uid (a judge that is not root, on CUDA: no
        # Landlock) would read its environment and memory, the verdict's secret among them.
        close_to_other_processes()
        tmp = tempfile.gettempdir()
        remove_stale_judges(tmp)
        folder = Path(tmp) / str(judge_tag(pid))
        folder.mkdir(mode=0o711, exist_ok=True)  # workers (their own uids) pass through
        _JUDGE_FOLDERS[pid] = folder
    return _JUDGE_FOLDERS[pid]


# One zygote per judge process and worker environment (device, visible GPUs), all of a
# judge's forked from its one base.
_ZYGOTES: dict[tuple[int, str | None, str | None], Zygote] = {}
_ZYGOTE_BASES: dict[int, ZygoteBase] = {}


def zygote_for(env: dict[str, str]) -> Zygote:
    """This judge's zygote for processes of environment `env` (its device and GPUs)."""
    pid = os.getpid()
    key = (pid, env.get("TRITON_INTERPRET"), env.get("CUDA_VISIBLE_DEVICES"))
    if key not in _ZYGOTES:
        if pid not in _ZYGOTE_BASES:
            _ZYGOTE_BASES[pid] = ZygoteBase(env)
        _ZYGOTES[key] = Zygote(env, judge_folder(), _ZYGOTE_BASES[pid])
    return _ZYGOTES[key]


@atexit.register
def _close_zygotes() -> None:
    for key, zygote in list(_ZYGOTES.items()):
        if key[0] == os.getpid():
            zygote.close()
    if os.getpid() in _ZYGOTE_BASES:
        _ZYGOTE_BASES[os.getpid()].close()


class CandidateFailure(Exception):
    """The candidate did something that is a verdict, not a kdiff bug."""

    signature = "candidate_error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class CandidateRaised(CandidateFailure):
    signature = "raised"


class CandidateTimeout(CandidateFailure):
    signature = "hang"

    def __init__(self, detail: str, stalled: bool = False) -> None:
        super().__init__(detail)
        # Its worker's threads wanted a CPU for less than STALL_SHARE of the call (the judge's
        # reading, kdiff.sandbox.runnable): asleep or blocked, not computing slowly.
        self.stalled = stalled


class CandidateOverBudget(CandidateTimeout):
    """The case's whole wall budget is spent: every later request fails at once."""

    signature = "case_timeout"


class CandidateCrashed(CandidateFailure):
    signature = "crash"


class CandidateLoadError(CandidateFailure):
    signature = "does_not_import"


class CandidateWroteInputsLate(CandidateFailure):
    """An input changed in the arena after the judge had read it back at the call's reply,
    before the judge's next request or write: work of the candidate's left running after the
    call returned (a thread, a child process) wrote it, as it would into a caller's tensor
    that the caller reads after the call."""

    signature = "input_mutated"


class CandidateOutOfMemory(CandidateFailure):
    """The kernel's out-of-memory killer took the worker at its own memory limit."""

    signature = "out_of_memory"


def default_memory_bytes() -> int:
    """Half the machine's memory: a bomb fails in its own worker long before the judge or a
    second job feels it (virtual size; a CPU worker with torch and Triton maps ~1 GiB)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


# Device files a worker may open for writing (CUDA and ROCm drivers, /dev/null and friends).
_DEVICE_PATTERNS = ("null", "zero", "full", "random", "urandom", "nvidia*", "kfd", "dri/*")


def _writable_devices() -> list[str]:
    return sorted(str(p) for pattern in _DEVICE_PATTERNS for p in Path("/dev").glob(pattern))


@dataclass
class SandboxLimits:
    call_timeout: float = 120.0  # one call of the model (the Triton interpreter is slow)
    start_timeout: float = 600.0  # import and build (a load_inline extension compiles here)
    # Memory cap of one worker (None: no cap): its cgroup's limit on every device (for root);
    # on the CPU also its address-space cap (on CUDA that breaks the CUDA context).
    memory_bytes: int | None = field(default_factory=default_memory_bytes)
    case_timeout: float | None = 3600.0  # wall budget of one case, from the worker's start
    max_tasks: int | None = 512  # processes + threads of one worker (fork storms)
    max_file_bytes: int | None = 1 << 30  # one file it writes, its stdout log included
    max_reply_bytes: int = 4 << 30  # the largest reply the judge will read
    confine: bool = True  # namespaces and Landlock on the CPU (kdiff.sandbox.confine)
    # For a judge running as root: each worker as an unprivileged uid of its own, under a
    # seccomp filter (kdiff.sandbox.confine); on every device, the CUDA driver included.
    own_uid: bool = True
    # Fork workers from a zygote that has imported torch (kdiff.sandbox.zygote).
    warm_start: bool = True
    gpu_memory_fraction: float | None = 0.5  # of the device, for a CUDA worker's allocator


@functools.cache
def code_folders() -> list[str]:
    """Where a worker imports from: Python's own library, the installed packages, kdiff."""
    paths = sysconfig.get_paths()
    return sorted(
        {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
        | {str(Path(__file__).resolve().parents[2])}
    )


_PRIVATE_READS_TOLD: set[tuple[str, ...]] = set()


def read_capability(reads: list[str], landlock: bool) -> bool:
    """Whether a worker that must read `reads` (and code_folders) keeps the judge's read
    capability: only where one of them is private to its owner. Told once per set on
    stderr where no Landlock rule keeps that worker out of the judges' cache (CUDA)."""
    private = tuple(reads_need_capability([*code_folders(), *reads]))
    if private and not landlock and private not in _PRIVATE_READS_TOLD:
        _PRIVATE_READS_TOLD.add(private)
        print(
            f"kdiff: {private[0]}: readable by its owner alone, so workers keep the "
            f"judge's read access and can read the judges' cache; `chmod o+rx` its "
            f"folders to keep them out",
            file=sys.stderr,
        )
    return bool(private)


def landlock_applies(device: str, limits: SandboxLimits) -> bool:
    """Whether a worker on `device` is put under Landlock (and namespaces). On CUDA both
    user/PID namespaces and Landlock (each alone) make the driver fail (cudaGetDeviceCount:
    error 304), seen on an H200 under Firecracker, kernel 6.18: CUDA processes keep the
    limits, the cgroups, the uid and the seccomp filter."""
    return limits.confine and device != "cuda"


def confinement(
    device: str, limits: SandboxLimits, workdir: Path, reads: tuple[Path, ...] = (), **extra: Any
) -> Confinement:
    """How a process running candidate code on `device`, started by this process, is
    confined: it writes only in `workdir` (and the devices it needs), reads what any user may
    besides the files `reads` names (read_capability), under the memory, task and file-size
    caps, with no network, and dies with this process."""
    root = os.geteuid() == 0
    landlock = landlock_applies(device, limits)
    return Confinement(
        writable=[str(workdir), *_writable_devices()],
        unreadable=[str(private_root())],
        own_uid=limits.own_uid,
        own=[str(workdir)],
        seccomp=limits.own_uid,
        read_capability=root
        and limits.own_uid
        and read_capability([str(p) for p in reads], landlock and landlock_abi() > 0),
        parent=os.getpid(),
        memory_bytes=limits.memory_bytes if device == "cpu" else None,
        max_tasks=limits.max_tasks,
        max_file_bytes=limits.max_file_bytes,
        namespaces=landlock,
        landlock=landlock,
        **extra,
    )


# Once a request has run past its deadline the candidate is known to hang, and a later request
# waits KNOWN_HANG_FACTOR times the slowest answer of its command so far, at least
# KNOWN_HANG_FLOOR_S, instead of the full timeout again: a kernel that hangs costs one full
# timeout, not one per gate. Ten times: twice for a held-out size (CMP-03 scales a dimension to
# 2v+1), five times for load (a call on 2 cores shared by 10 busy processes). The floor holds a
# command with no answer yet, or one answered in milliseconds, whose next answer may come from
# a fresh worker paying its lazy start again (0.2-0.3 s for a Triton kernel's first
# interpreted call here; a CUDA context and a Triton cache load take seconds).
KNOWN_HANG_FACTOR = 10.0
KNOWN_HANG_FLOOR_S = 10.0


@dataclass
class HangRecord:
    """What the judge learned about a candidate's hangs: the first timeout, and each request's
    slowest answer so far (the later budgets follow from them)."""

    first: str | None = None  # the first request that ran past its deadline
    slowest: dict[str, float] = field(default_factory=dict)  # command -> seconds
    waited: list[float] = field(default_factory=list)  # each deadline that ran out, seconds

    def budget(self, cmd: str, timeout: float) -> float:
        if self.first is None:
            return timeout
        return min(timeout, max(KNOWN_HANG_FLOOR_S, KNOWN_HANG_FACTOR * self.slowest.get(cmd, 0)))

    def answered(self, cmd: str, seconds: float) -> None:
        self.slowest[cmd] = max(seconds, self.slowest.get(cmd, 0.0))

    def timed_out(self, cmd: str, timeout: float) -> None:
        self.first = self.first or f"`{cmd}` gave no answer within {timeout:.0f} s"
        self.waited.append(timeout)

    def excuse(self) -> None:
        """The request that timed out answered when judged again alone: the machine's load,
        not a hang (GateContext.request_judged_alone)."""
        self.first = None


# The most of a failure's text (a reply's `error`) the judge keeps. The worker's own errors
# are shorter: an exception's message cut at 500 characters behind its type's name, a load
# error's path (at most PATH_MAX, 4096) and first line (cut at 300). A candidate writes its
# reply itself, and the text becomes the detail of every gate it fails and of the native
# check, in every report and in the results store (tests/hostile/floods_its_error.py).
MAX_ERROR_CHARS = 8192


def bounded_error(text: str) -> str:
    """A failure's text, cut to MAX_ERROR_CHARS (saying how much was cut)."""
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}... ({len(text) - MAX_ERROR_CHARS} more characters)"


def well_formed(reply: Any) -> bool:
    """Whether a worker's reply has the form every reply has: whether it succeeded (`ok`, a
    bool), and where it did not, the error (a str) that becomes the candidate's failure. Read
    before anything else in it, so that a reply of another form (no `error`) is the
    candidate's crash, not an exception of the judge's that left the verdict open."""
    return (
        isinstance(reply, dict)
        and type(reply.get("ok")) is bool
        and (reply["ok"] or isinstance(reply.get("error"), str))
    )


@dataclass
class CandidateProcess:
    problem: Path
    candidate: Path
    device: str = "cpu"
    entry_points: tuple[str, ...] = ("ModelNew",)
    limits: SandboxLimits = field(default_factory=SandboxLimits)

    def __post_init__(self) -> None:
        self.problem, self.candidate = Path(self.problem).resolve(), Path(self.candidate).resolve()
        self._proc: subprocess.Popen[bytes] | ForkedWorker | None = None
        self._to_worker = self._from_worker = -1
        self._replay: list[dict[str, Any]] = []  # builds to redo after a restart
        # A restarted worker records (and profiles) as the last one did.
        self._record_provenance = self._profile_provenance = True
        # Neutral names: the log (the worker's stdout) and its folder (its cwd) must not
        # tell a candidate that kdiff runs it.
        self._log = tempfile.NamedTemporaryFile(suffix=".log", dir=judge_folder(), delete=False)
        # The worker's own folder: cwd, TMPDIR and compiler caches, the only place it may
        # write. Caches are private so that no candidate can plant a compiled kernel for
        # another one.
        self.workdir = Path(tempfile.mkdtemp(dir=judge_folder()))
        self._deadline: float | None = None
        self._cgroup: WorkerCgroup | None = None
        # Round trips per command and their wall seconds (benchmarks/cost.py splits a gate's
        # time into the candidate's share and the judge's own from these).
        self.request_counts: Counter[str] = Counter()
        self.request_seconds: Counter[str] = Counter()
        self.hangs = HangRecord()
        # A candidate that failed to import fails every later start the same way: its file
        # and the worker's start are the same for every gate (a load can only reject, so a
        # candidate gains nothing by failing on purpose). Each start is seconds on CUDA.
        self.load_error: str | None = None
        self.starts = 0  # workers started (each one imported the candidate)
        # A CPU worker computes on inputs in this memory, which the judge reads after each
        # call itself (kdiff.sandbox.arena); a CUDA worker copies them to its device.
        self._arena: InputArena | None = None
        self._kept_places: dict[str, list[dict[str, Any] | None]] = {}  # by stored name

    def _remaining(self) -> float | None:
        return None if self._deadline is None else self._deadline - time.monotonic()

    def not_charged(self, seconds: float) -> None:
        """`seconds` of the case's wall time spent on no work of its own (waiting for another
        judge's call: kdiff.judging.context.CALL_LOCK), which its wall budget does not count."""
        if self._deadline is not None:
            self._deadline += seconds

    def _budgeted(self, timeout: float) -> float:
        remaining = self._remaining()
        if remaining is None:
            return timeout
        if remaining <= 0:
            self._kill()
            raise CandidateOverBudget(
                f"the case's wall budget of {self.limits.case_timeout:.0f} s is spent"
            )
        return min(timeout, remaining)

    # -- lifecycle ------------------------------------------------------------------------
    def _spawn(self) -> None:
        if self.load_error is not None:
            raise CandidateLoadError(self.load_error)
        if self._deadline is None and self.limits.case_timeout:
            self._deadline = time.monotonic() + self.limits.case_timeout
        self._budgeted(0.0)  # a spent budget starts nothing
        if self.device == "cpu":  # a fresh one: what a worker left in the last is freed
            self._close_arena()
            self._arena = InputArena(min(ARENA_BYTES, self.limits.memory_bytes or ARENA_BYTES))
        judge_to_worker_r, judge_to_worker_w = os.pipe()
        worker_to_judge_r, worker_to_judge_w = os.pipe()
        protocol.widen_pipe(judge_to_worker_w)
        protocol.widen_pipe(worker_to_judge_w)
        # An allow-list (kdiff.sandbox.workerenv): no secret of the judge's, nothing that says kdiff.
        env = confined_environment(os.environ, self.device, self.workdir)
        limits = self.limits
        if os.geteuid() == 0:  # cgroups are root's to make
            self._cgroup = WorkerCgroup.create(
                f"{self.workdir.parent.name}-{id(self):x}", limits.memory_bytes, limits.max_tasks
            )
        spec = confinement(
            self.device,
            limits,
            self.workdir,
            (self.problem, self.candidate),
            cgroups=self._cgroup.paths if self._cgroup else [],
            pipe_fds=[
                judge_to_worker_r,
                worker_to_judge_w,
                *([self._arena.fd] if self._arena else []),
            ],
            cwd=str(self.workdir),
        )
        self._proc = None
        if limits.warm_start:
            try:
                self._proc = zygote_for(env).spawn(spec, env, str(self.workdir), self._log.fileno())
            except ZygoteUnavailable:
                pass  # a cold start below
        if self._proc is None:
            worker = [
                sys.executable,
                "-m",
                "kdiff.sandbox.zygote",
                "worker",
                *map(str, spec.pipe_fds),
            ]
            self._proc = subprocess.Popen(
                spec.command(worker),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                pass_fds=tuple(spec.pipe_fds),
                env=env,
                start_new_session=True,
                cwd=str(self.workdir.parent),  # the judge's: the launcher enters spec.cwd
            )
        os.close(judge_to_worker_r)
        os.close(worker_to_judge_w)
        self._to_worker, self._from_worker = judge_to_worker_w, worker_to_judge_r
        init = {
            "cmd": "init",
            "problem": str(self.problem),
            "candidate": str(self.candidate),
            "device": self.device,
            "entry_points": list(self.entry_points),
            "gpu_memory_fraction": self.limits.gpu_memory_fraction,
            "record_provenance": self._record_provenance,
            "profile_provenance": self._profile_provenance,
        }
        reply = self._exchange(init, self._budgeted(self.limits.start_timeout))
        self.starts += 1
        if not reply["ok"]:
            self.close()
            self.load_error = reply["error"]
            raise CandidateLoadError(self.load_error)
        try:
            for build in self._replay:
                self._checked(self._exchange(build, self._budgeted(self.limits.start_timeout)))
        except BaseException:
            # A worker missing a build would answer every later request about it with a
            # KeyError: the next request starts a fresh one and replays again.
            self._kill()
            raise

    def compile_launches(
        self,
        jobs: list[tuple[Launch, str]],
        timeout: float = COMPILE_TIMEOUT_S,
        stop: Callable[[Outcomes], str | None] | None = None,
        modules: JudgesModules | None = None,
    ) -> list[dict[str, Any]]:
        """Each (launch, target) compiled without a GPU (kdiff.sandbox.launches). A compiler
        child imports the candidate's module (or the file its kernel came from), so it is
        confined as the worker is, in a folder of the judge's, not the worker's (which the
        worker, still running, could write the child's results into); it is forked from a
        zygote that holds torch and Triton in compile mode (no TRITON_INTERPRET): a fresh
        interpreter spent 2.8 of its 3.6 s importing them, for every kernel on a machine with
        no resource cache yet. The compiler children of one call share one cgroup (memory and
        task caps), killed and removed when the call returns."""
        env = compiler_environment()
        if self.device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
        cgroup = (
            WorkerCgroup.create(
                f"{self.workdir.parent.name}-{id(self):x}-compile",
                self.limits.memory_bytes,
                self.limits.max_tasks,
            )
            if os.geteuid() == 0
            else None
        )

        def start(argv: list[str], child_env: dict[str, str], log: BinaryIO, cwd: Path) -> Any:
            spec = confinement(
                self.device,
                self.limits,
                cwd,
                (self.problem, self.candidate),
                pipe_fds=[],
                cgroups=cgroup.paths if cgroup else [],
            )
            if self.limits.warm_start:
                try:
                    # Keyed by the zygote's own environment, not the child's per-call folders.
                    return zygote_for(env).spawn(
                        spec, child_env, str(cwd), log.fileno(), compile_argv=argv
                    )
                except ZygoteUnavailable:
                    pass  # a cold start below
            return subprocess.Popen(
                spec.command([sys.executable, "-m", "kdiff.sandbox.launches", *argv]),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_env,
                start_new_session=True,
                cwd=str(cwd),
            )

        try:
            # Under the case's wall budget, as every request is: the launches are the
            # worker's report, and their number its choice.
            return compile_launches(
                jobs, timeout, start, stop=stop, modules=modules, deadline=self._deadline
            )
        finally:
            if cgroup:
                cgroup.kill()
                cgroup.remove()

    @property
    def writes_confined(self) -> bool:
        """Whether the worker and its compiler children can write only in their own folders
        (and the folders anyone may write), as the judge sets them up, not as a worker says:
        Landlock on a kernel that has it, or an unprivileged uid of their own (a root judge).
        Otherwise any file, the judge's caches included, may hold what a candidate wrote."""
        return (landlock_applies(self.device, self.limits) and landlock_abi() > 0) or (
            self.limits.own_uid and os.geteuid() == 0
        )

    def close(self) -> None:
        if self._proc is None:
            return
        try:
            protocol.write_all(self._to_worker, protocol.encode({"cmd": "exit"}))
        except protocol.ChannelClosed:
            pass
        try:
            self._proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        self._kill()

    def _kill(self) -> None:
        if self._proc is None:
            return
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)  # the candidate's children too
        except (ProcessLookupError, PermissionError):
            pass
        if self._cgroup:  # and those that left its process group
            self._cgroup.kill()
        self._proc.wait()
        remove_orphaned_files()  # what its uid left in /tmp and /dev/shm
        for fd in (self._to_worker, self._from_worker):
            try:
                os.close(fd)
            except OSError:
                pass
        self._proc = None
        if self._cgroup:
            self._cgroup.remove()
            self._cgroup = None

    def __enter__(self) -> "CandidateProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._close_arena()
        try:
            os.unlink(self._log.name)
        except OSError:
            pass
        shutil.rmtree(self.workdir, ignore_errors=True)

    # -- requests -------------------------------------------------------------------------
    def log_tail(self, n: int = 600) -> str:
        try:
            data = Path(self._log.name).read_bytes()
        except OSError:
            return ""
        # Without the launcher's lines (one per start): only what the worker printed.
        data = b"".join(
            line
            for line in data[-n - 4096 :].splitlines(keepends=True)
            if not line.startswith(CONTAINMENT_LINE.encode())
        )
        return data[-n:].decode("utf-8", "replace").strip()

    @property
    def pid(self) -> int | None:
        """The process the worker was started as (its launcher; the worker and whatever it
        starts are its descendants), None while none runs."""
        return self._proc.pid if self._proc is not None else None

    @property
    def containment(self) -> str:
        """The confinement mechanisms in force in the worker (kdiff.sandbox.confine)."""
        try:
            with open(self._log.name, "rb") as f:
                first = f.readline().decode("utf-8", "replace").strip()
        except OSError:
            return ""
        return first[len(CONTAINMENT_LINE) :] if first.startswith(CONTAINMENT_LINE) else ""

    def _runnable_seconds(self) -> float | None:
        """How long the worker's threads have wanted a CPU (kdiff.sandbox.runnable): those of
        the processes in its cgroups, else of its process group. Read on the CPU device only,
        where a timeout at grown sizes may be the interpreter's time."""
        if self.device != "cpu" or self._proc is None:
            return None
        pids = self._cgroup.procs() if self._cgroup else process_group(self._proc.pid)
        return runnable_seconds(pids)

    def _exchange(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        started = time.monotonic()
        # How long the worker wanted a CPU is judged from the moment a call is overdue
        # (kdiff.sandbox.runnable.STALL_WATCH_AFTER_S), read then and at a timeout only.
        watched = RunnableReading(started, None)

        def overdue() -> None:
            nonlocal watched
            watched = RunnableReading(time.monotonic(), self._runnable_seconds())

        try:
            protocol.write_all(self._to_worker, protocol.encode(msg))
            reply = protocol.read_message(
                self._from_worker, timeout, trusted=False, limit=self.limits.max_reply_bytes,
                overdue=protocol.Overdue(min(STALL_WATCH_AFTER_S, timeout * STALL_WATCH_SHARE),
                                         overdue),
            )
            self.hangs.answered(msg["cmd"], time.monotonic() - started)
        except protocol.MessageRefused as exc:
            self._kill()
            raise CandidateCrashed(f"reply to `{msg['cmd']}` refused: {exc}") from None
        except protocol.ChannelTimeout:
            runnable_after = self._runnable_seconds()  # before the kill ends its threads
            wall = time.monotonic() - watched.at
            self._kill()
            remaining = self._remaining()
            if remaining is not None and remaining <= 0:
                raise CandidateOverBudget(
                    f"no answer to `{msg['cmd']}`: the case's wall budget of "
                    f"{self.limits.case_timeout:.0f} s is spent"
                ) from None
            known = f" (known to hang: {self.hangs.first})" if self.hangs.first else ""
            self.hangs.timed_out(msg["cmd"], timeout)
            runnable = (None if watched.seconds is None or runnable_after is None
                        else runnable_after - watched.seconds)
            stalled = runnable is not None and runnable < STALL_SHARE * wall
            shown = (f"; its threads wanted a CPU for {runnable:.2g} s of {wall:.2g} s"
                     if stalled else "")
            raise CandidateTimeout(
                f"no answer to `{msg['cmd']}` within {timeout:.0f} s" + shown + known,
                stalled=stalled,
            ) from None
        except (protocol.ChannelClosed, EOFError) as exc:
            code = self._proc.poll() if self._proc else None
            if self._proc is not None and code is None:
                try:
                    code = self._proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            oom_kills = self._cgroup.oom_kills() if self._cgroup else 0
            self._kill()
            if oom_kills:
                raise CandidateOutOfMemory(
                    f"worker killed by the out-of-memory killer at its memory limit of "
                    f"{self.limits.memory_bytes >> 20} MiB (its shared memory and memfd "
                    f"files counted) during `{msg['cmd']}`"
                ) from exc
            how = (
                f"killed by signal {signal.Signals(-code).name}"
                if code and code < 0
                else f"exited with status {code}"
            )
            tail = self.log_tail(300).replace("\n", " | ")
            raise CandidateCrashed(
                f"worker {how} during `{msg['cmd']}`" + (f"; last output: {tail}" if tail else "")
            ) from exc
        except Exception as exc:  # noqa: BLE001 - an unreadable reply: a hostile worker
            self._kill()
            raise CandidateCrashed(f"unreadable reply to `{msg['cmd']}`: {exc}") from None
        if not well_formed(reply):
            self._kill()
            raise CandidateCrashed(f"malformed reply to `{msg['cmd']}`")
        if not reply["ok"]:
            reply["error"] = bounded_error(reply["error"])
        return reply

    @staticmethod
    def _checked(reply: dict[str, Any]) -> dict[str, Any]:
        if not reply["ok"]:
            raise CandidateRaised(reply["error"])
        return reply

    def request(self, cmd: str, timeout: float | None = None, **payload: Any) -> dict[str, Any]:
        if self._proc is None:
            self._spawn()
        self._check_inputs_left_alone()
        msg = {"cmd": cmd, **payload}
        places = self._place_inputs(msg)
        started = time.perf_counter()
        # The default deadline shrinks once the candidate is known to hang (HangRecord); a
        # deadline the caller sets is kept (a timeout judged again alone).
        if timeout is None:
            timeout = self.hangs.budget(cmd, self.limits.call_timeout)
        reply = self._exchange(msg, self._budgeted(timeout))
        self.request_counts[cmd] += 1
        self.request_seconds[cmd] += time.perf_counter() - started
        if not reply["ok"] and reply.get("device_broken") is True:
            # After an illegal or misaligned access every later CUDA call of the process fails
            # with the same error: the next request starts a fresh worker (builds replayed),
            # so that the next gate judges the kernel, not this gate's leftover error. The
            # worker finds it by using its context after the error (probes.context_broken),
            # not from the error's text, which a candidate writes: "CUDA error: ..." raised on
            # the CPU restarted its worker. Its word gains it only a restart, which it has
            # by exiting too.
            self._kill()
        reply = self._checked(reply)
        if cmd == "build":
            self._replay.append(msg)
        reply.pop(JUDGE_READ_INPUTS, None)  # the judge's own reading, never the worker's
        if places is not None:
            reply[JUDGE_READ_INPUTS] = self._arena.read(places)
        return reply

    def _check_inputs_left_alone(self) -> None:
        """Before the judge next sends or writes anything: the inputs it read back after the
        worker's replies hold what it read then. The judge looks at its own memory, so that
        a worker can neither hide the write nor time its undoing after this look (it learns
        of a request only once this has passed); a write undone before it goes unseen."""
        if self._arena is None or self._proc is None:
            return
        written = self._arena.written_since_read()
        if not written:
            return
        self._arena.read(written)  # reported once: the next look compares with this
        first = written[0]
        raise CandidateWroteInputsLate(
            f"an input ({tuple(first['shape'])} {first['dtype'].removeprefix('torch.')}) "
            f"changed after the call had returned and its inputs were read back: written "
            f"by work the candidate left running (a thread, a child process) before the next "
            f"request"
        )

    def _place_inputs(self, msg: dict[str, Any]) -> list[dict[str, Any] | None] | None:
        """A call's inputs put in the arena (their places in the message, the tensors left out
        of it), where there is one; those a worker keeps by name stay there until `forget`,
        and a call on them reads them there."""
        if self._arena is None:
            return None
        if msg["cmd"] == "forget":
            self._arena.release()
            self._kept_places.clear()
        if msg["cmd"] != "call":
            return None
        if msg.get("use_stored_inputs"):
            return self._kept_places.get(msg["use_stored_inputs"])
        name = msg.get("store_inputs_as")
        places = self._arena.place(msg["inputs"], keep=bool(name))
        if places is not None:
            msg["inputs"] = [None if p is not None else x for x, p in zip(msg["inputs"], places)]
            msg["arena"] = places
            if name:
                self._kept_places[name] = places
        return places

    def overwrite_stored(self, name: str, values: list[Any]) -> None:
        """New values written into the input set the worker keeps as `name`, in place (None
        where an input keeps its own): by the judge in the arena where every one of them lies
        there, so that nothing in the worker sees the write happen; else by the worker."""
        places = self._kept_places.get(name) if self._proc is not None else None
        self._check_inputs_left_alone()
        if places is not None and all(
            p is not None for p, v in zip(places, values) if v is not None
        ):
            self._arena.write(places, values)
            return
        self.request("overwrite_stored", name=name, values=values)

    def _close_arena(self) -> None:
        if self._arena is not None:
            self._arena.close()
            self._arena = None
        self._kept_places = {}

    def provenance(self, recording: bool, profiling: bool = True) -> dict[str, Any]:
        """The worker's provenance record since the last reading (which this one clears);
        from now on its worker, and any restarted one, records the candidate's calls only
        if `recording`, under the profiler (CUDA's device time) only if `profiling`."""
        self._record_provenance, self._profile_provenance = recording, profiling
        return self.request("provenance", clear=True, recording=recording,
                            profiling=profiling)["provenance"]
