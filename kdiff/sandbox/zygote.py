"""A warm start for candidate workers: one process per judge that has imported torch, Triton
and the worker (a cold start pays 1-10 s for that per candidate), and forks a fresh worker
for each candidate.

Isolation is the cold start's: the zygote never runs candidate code and never initialises
CUDA (a forked CUDA context is unusable; the child initialises its own), so every child starts
from the same pristine interpreter. The child closes every descriptor but its pipes and log,
leaves the zygote's session, takes the worker's environment and folder, and is confined
(kdiff.sandbox.confine.run_confined) before the worker loop reads its first message.

A judge's zygotes (one per worker environment: on the CPU the workers' interpreting one and
RES-02's compiling one) are forked from one base process of the judge's that has imported
torch and nothing of Triton's (ZygoteBase): torch is imported once per judge, not once per
zygote, and each zygote imports Triton in its own mode (TRITON_INTERPRET or not) after the
fork, its environment set.

The judge talks to the zygote over a Unix socket: `spawn` (the pipe ends and the log travel as
SCM_RIGHTS) answers the child's pid; `wait` answers its exit status once the zygote has reaped
it (a negative signal number, as subprocess does). `ForkedWorker` is the judge's Popen-like
handle on such a child.
"""
from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kdiff.sandbox.confine import Confinement, die_with, remove_leftovers, run_confined
from kdiff.sandbox.workerenv import LOADED_AT_START

_MAX_REQUEST = 1 << 20
# How long one ask for a child's status may hold the zygote (ForkedWorker.wait): the most
# another thread waits to spawn or ask, while the zygote still sees the child's end as soon
# as it reaps it.
WAIT_SLICE_S = 0.02


class ZygoteUnavailable(Exception):
    """The zygote is gone or did not start: the caller falls back to a cold start."""


class ZygoteBase:
    """The judge's side of the process its zygotes are forked from: started on first use
    with the first zygote's environment (and LOADED_AT_START, which a zygote forked later
    cannot change), restarted if it died."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = {**env, **LOADED_AT_START}
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    def fork_zygote(self, env: dict[str, str], folder: Path, sock: socket.socket
                    ) -> "ForkedZygote":
        """A zygote of environment `env` serving the judge on `sock`, its end of a socket
        pair."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                if self._sock is not None:
                    self._sock.close()  # a base that died
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "kdiff.sandbox.zygote", "base",
                     str(theirs.fileno()), str(os.getpid())],
                    pass_fds=(theirs.fileno(),), env=self.env, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, start_new_session=True)
                theirs.close()
                self._sock = ours
            request = json.dumps({"env": env, "folder": str(folder)}).encode()
            try:
                socket.send_fds(self._sock, [request], [sock.fileno()])
                data, fds, _, _ = socket.recv_fds(self._sock, _MAX_REQUEST, 1)
            except OSError as exc:
                raise ZygoteUnavailable(str(exc)) from None
            if not data or len(fds) != 1:
                raise ZygoteUnavailable("the zygotes' base died")
            return ForkedZygote(json.loads(data)["pid"], fds[0])

    def close(self) -> None:
        """After its zygotes: with its socket closed it ends."""
        if self._proc is not None:
            _close(self._proc, self._sock)
            self._proc = None


class ForkedZygote:
    """What Zygote needs of a Popen, for a zygote the base forked (not the judge's child):
    watched and killed through a pidfd the base opened before it could reap the zygote, so
    that it names that process and no later one of its pid."""

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid, self._pidfd = pid, pidfd

    def poll(self) -> int | None:
        """Not its exit status (the base reaps it): 0 once it has ended, else None."""
        return self._ended(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._ended(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"zygote {self.pid}", timeout or 0.0)
        return code

    def kill(self) -> None:
        if self._pidfd >= 0:
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it has just ended

    def _ended(self, timeout: float | None) -> int | None:
        if self._pidfd >= 0:
            if not select.select([self._pidfd], [], [], timeout)[0]:
                return None
            os.close(self._pidfd)
            self._pidfd = -1
        return 0


class Zygote:
    """The judge's side: starts the zygote on first use (forked by `base`), restarts it if it
    died."""

    def __init__(self, env: dict[str, str], folder: Path, base: ZygoteBase) -> None:
        self.env = env
        self.folder = folder  # the judge's folder (kdiff.sandbox.process.judge_folder)
        self.base = base
        self.owner = os.getpid()  # a forked judge must start its own, not share this one
        self._proc: ForkedZygote | None = None
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = self.base.fork_zygote(self.env, self.folder, theirs)
        finally:
            theirs.close()
        self._sock = ours

    def _call(self, request: dict[str, Any], fds: tuple[int, ...] = ()) -> dict[str, Any]:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                if request["op"] == "wait":
                    raise ZygoteUnavailable("the zygote is not running")
                self._start()
            try:
                socket.send_fds(self._sock, [json.dumps(request).encode()], list(fds))
                data = self._sock.recv(_MAX_REQUEST)
            except OSError as exc:
                raise ZygoteUnavailable(str(exc)) from None
            if not data:
                raise ZygoteUnavailable("the zygote died")
            return json.loads(data)

    def spawn(self, spec: Confinement, env: dict[str, str], cwd: str, log_fd: int,
              compile_argv: list[str] | None = None) -> "ForkedWorker":
        """A confined worker on spec.pipe_fds, or with `compile_argv` the Triton compiler
        child (kdiff.sandbox.launches) on those arguments."""
        reply = self._call({"op": "spawn", "spec": asdict(spec), "env": env, "cwd": cwd,
                            "compile": compile_argv}, (*spec.pipe_fds, log_fd))
        return ForkedWorker(self, reply["pid"])

    def spawn_python(self, spec: Confinement, env: dict[str, str], cwd: str, argv: list[str],
                     out_fd: int, err_fd: int) -> "ForkedWorker":
        """A confined child that does what `python ARGV` does (run_python), its standard
        output and error on `out_fd` and `err_fd`."""
        reply = self._call({"op": "spawn", "spec": asdict(spec), "env": env, "cwd": cwd,
                            "python": argv}, (*spec.pipe_fds, out_fd, err_fd))
        return ForkedWorker(self, reply["pid"])

    def close(self) -> None:
        if self._proc is not None:
            _close(self._proc, self._sock)
            self._proc = None


def _close(proc: "subprocess.Popen[bytes] | ForkedZygote", sock: socket.socket) -> None:
    """A zygote or base ends once its socket is closed; killed if it has not in 5 s."""
    sock.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class ForkedWorker:
    """What sandbox needs of a Popen, for a worker the zygote forked."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self._status(0.0)

    def wait(self, timeout: float | None = None) -> int:
        # The zygote answers one request at a time, and threads may share it (TritonBench's
        # gold recordings, a child each): a wait that blocked it until this child ended held
        # every other thread's spawn and wait, so their children ran one after another and
        # the longest held them all. It waits in slices, letting the others in between.
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = WAIT_SLICE_S if deadline is None else deadline - time.monotonic()
            code = self._status(max(0.0, min(WAIT_SLICE_S, left)))
            if code is not None:
                return code
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            time.sleep(0.001)  # a lock is not fair: the waiting threads get theirs first

    def _status(self, timeout: float | None) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = self.zygote._call(
                    {"op": "wait", "pid": self.pid, "timeout": timeout})["status"]
            except ZygoteUnavailable:  # no one can reap it now; it was killed with its group
                self.returncode = -signal.SIGKILL
        return self.returncode


# -- the zygote's side --------------------------------------------------------------------
def _child(request: dict[str, Any], fds: list[int], zygote: int) -> None:
    """In the forked child: become the worker (or the compiler child), confined, to die
    with the zygote."""
    import tempfile
    if request.get("python"):
        *pipes, out_fd, err_fd = fds
    else:
        *pipes, out_fd = fds
        err_fd = out_fd
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the zygote's own handler
    os.setsid()
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    keep = {0, 1, 2, *pipes}
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in keep:
            try:
                os.close(int(name))
            except OSError:
                pass
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # recomputed from the worker's TMPDIR
    spec = Confinement(**{**request["spec"], "pipe_fds": pipes, "parent": zygote})
    if request.get("compile"):
        run_confined(spec, lambda: run_compiler(request["compile"]))
    elif request.get("python"):
        run_confined(spec, lambda: run_python(request["python"]))
    else:
        run_confined(spec, lambda: run_worker(*pipes))


def run_compiler(argv: list[str]) -> None:
    from kdiff.sandbox import launches
    try:
        code = launches.main(["kdiff.sandbox.launches", *argv])
    finally:
        sys.stdout.flush()
    os._exit(code)


def run_python(argv: list[str]) -> None:
    """What `python ARGV` does, in this interpreter that has imported torch: `-m MODULE ARGS`
    or `SCRIPT ARGS` run as __main__, sys.argv and sys.path[0] as the interpreter sets them
    (the working folder, the script's folder), then the exit status it gives (SystemExit's
    code; 1 after the traceback on stderr for an exception) once the atexit functions ran."""
    import atexit
    import runpy
    code = 0
    # the child's PYTHONPATH, which the zygote's start may not have had, after sys.path[0]
    wanted = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[1:1] = [p for p in wanted if p not in sys.path]
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]  # run_module puts the module's file first
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException as exc:  # noqa: BLE001 - as the interpreter: the traceback, status 1
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, "<frozen runpy>"):
            tb = tb.tb_next  # from the program's first frame, as the interpreter prints it
        # the interpreter's own printer ("Did you mean ...?"), which prints the exception's
        # __traceback__ whatever it is given
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run_worker(read_fd: int, write_fd: int, arena_fd: int | None = None) -> None:
    """The worker loop, warm or cold (its `init` request caps a CUDA worker's allocator)."""
    from kdiff.data.seeding import fp32_means_fp32, one_thread
    from kdiff.sandbox import worker
    one_thread()  # as the judge: the zygote's torch was started with one thread per core
    fp32_means_fp32()  # as the judge's reference
    try:
        worker.main(read_fd, write_fd, arena_fd)
    finally:
        sys.stdout.flush()
        os._exit(0)


def _prewarm_compiler() -> None:
    """One tiny kernel compiled for sm_90 before any fork, where children compile (RES-02's
    compiler children, CUDA workers): a process's first Triton compile also loads the backend
    and LLVM's targets and asks ptxas its version. A forked child then compiled the ReLU
    control for sm_90 and sm_100 in 0.31 s instead of 0.85 s."""
    import tempfile
    try:
        import triton
        import triton.language as tl
        from triton.backends.compiler import GPUTarget
    except ImportError:
        return

    @triton.jit
    def warm(x_ptr):  # type: ignore[no-untyped-def]
        tl.store(x_ptr, tl.load(x_ptr) + 1.0)

    saved = os.environ.get("TRITON_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="kdiff-prewarm-") as cache:
        os.environ["TRITON_CACHE_DIR"] = cache  # really compiled, and nothing left behind
        try:
            triton.compile(triton.compiler.ASTSource(fn=warm, signature={"x_ptr": "*fp32"},
                                                     constexprs={}),
                           target=GPUTarget("cuda", 90, 32))
        except Exception:  # noqa: BLE001 - no compiler here: each child starts it itself
            pass
        finally:
            if saved is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = saved


def serve_base(sock: socket.socket, judge: int) -> None:
    """The base of `judge`'s zygotes: imports torch, then forks a zygote for each request
    (its environment and the judge's folder; its socket as SCM_RIGHTS) and answers its pid
    and a pidfd of it, until the judge goes away (its socket closes, or it dies: SIGTERM
    from the kernel). Its zygotes end with the judge, not with it (serve)."""
    def judge_died(*_: object) -> None:
        if os.getppid() != judge:  # not only the judge's thread that started it (PDEATHSIG's unit)
            os._exit(0)

    signal.signal(signal.SIGTERM, judge_died)
    if not die_with(judge, signal.SIGTERM):
        return
    import torch  # noqa: F401 - the point of the base: once for every zygote of the judge
    gc.collect()
    gc.freeze()
    zygotes = _Children()
    try:
        _fork_zygotes(sock, judge, zygotes)
    finally:
        zygotes.reap()  # those the judge has closed, not left to an init that may not reap


def _fork_zygotes(sock: socket.socket, judge: int, zygotes: "_Children") -> None:
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, _MAX_REQUEST, 1)
        except OSError:
            return
        if not data:
            return  # the judge went away
        zygotes.reap()  # those ended: no zombies, and their statuses are no one's to ask
        zygotes.statuses.clear()
        request = json.loads(data)
        pid = os.fork()
        if pid == 0:
            sock.close()
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)  # serve's own handler follows
                os.setsid()
                os.environ.clear()
                os.environ.update(request["env"])  # before Triton reads TRITON_INTERPRET
                serve(socket.socket(fileno=fds[0]), judge, Path(request["folder"]))
            finally:
                os._exit(0)  # no interpreter teardown: the frozen imports are never collected
        os.close(fds[0])
        zygotes.live.add(pid)
        pidfd = os.pidfd_open(pid)  # before any reap: it names this child, not a later pid
        try:
            socket.send_fds(sock, [json.dumps({"pid": pid}).encode()], [pidfd])
        except OSError:
            return  # the judge went away while we answered
        finally:
            os.close(pidfd)


def serve(sock: socket.socket, judge: int, folder: Path) -> None:
    """Forks workers for `judge` until it goes away (its socket closes, or it dies: SIGTERM
    from the kernel as the base, which dies with it, dies), then kills those still running
    and removes what the judge left in `folder` and its workers' cgroups
    (kdiff.sandbox.confine.remove_leftovers), however it died. While the judge lives it goes
    on, its base gone or not: its workers are the judge's, in their calls."""
    try:
        judge_ended = os.pidfd_open(judge)  # readable once the judge has ended
    except ProcessLookupError:
        judge_ended = None

    def judge_died(*_: object) -> None:  # as if its socket closed: no exception mid-cleanup
        if judge_ended is not None and not select.select([judge_ended], [], [], 0)[0]:
            return  # only the base, or the thread of it that forked this, ended
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    signal.signal(signal.SIGTERM, judge_died)
    children = _Children()
    try:
        if judge_ended is not None:
            die_with(os.getppid(), signal.SIGTERM)  # the base's end, which the judge's brings
            _prepare_and_serve(sock, children)
    finally:
        children.kill_live()
        remove_leftovers(folder.name, str(folder.parent))


NVIDIA_DEVICES = Path("/dev/nvidiactl")


def _prepare_and_serve(sock: socket.socket, children: "_Children") -> None:
    import torch  # the base's already: the point of the zygote, imported before any fork
    try:
        import triton
    except ImportError:
        pass
    import kdiff.sandbox.worker  # noqa: F401
    interpreting = os.environ.get("TRITON_INTERPRET") == "1"
    if interpreting and not NVIDIA_DEVICES.exists():
        # Warmed here rather than in a candidate's first call, which a call timeout of 1 s
        # would judge a hang: cpp_extension, whose loaders every worker's provenance recorder
        # wraps (0.7 s to import). Not where there are NVIDIA devices: with them every
        # candidate on the H200 failed to import ("Cannot re-initialize CUDA in forked
        # subprocess"), so a CUDA machine's zygote imports only what it did before
        # provenance. Nor for a CPU zygote without the interpreter: it forks RES-02's
        # compiler children only (kdiff.sandbox.workerenv gives every CPU worker the
        # interpreter).
        import torch.utils.cpp_extension  # noqa: F401
        # A Triton launch's argument specialisation imports gluon on first use: 80 ms of
        # every Triton candidate's first call (4.6 s of the CPU default run), paid once here.
        try:
            import triton.experimental.gluon  # noqa: F401
        except ImportError:
            pass
    if not interpreting:
        _prewarm_compiler()
    gc.collect()
    gc.freeze()  # the imports are shared by every fork: no collection in a worker visits them
    _serve(sock, children)


class _Children:
    """The zygote's forked children: exit statuses once reaped, and those still running."""

    def __init__(self) -> None:
        self.statuses: dict[int, int] = {}
        self.live: set[int] = set()

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.statuses[pid] = os.waitstatus_to_exitcode(status)
            self.live.discard(pid)

    def kill_live(self) -> None:
        """The judge went away (it ended, was killed or interrupted) with workers still
        running: they go with it. A worker blocked in a call (a sleep, a wait) would read the
        judge's closed pipe only once that call returns."""
        for pid in self.live:
            try:
                os.killpg(pid, signal.SIGKILL)  # each child leads its own session
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + 2.0
        while self.live and time.monotonic() < deadline:  # reaped: out of their cgroups
            self.reap()
            time.sleep(0.01)


def _serve(sock: socket.socket, children: _Children) -> None:
    """Answer the judge's requests until it goes away."""
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, _MAX_REQUEST, 4)  # 2 pipes, arena, log
        except OSError:
            return
        if not data:
            return  # the judge went away
        request = json.loads(data)
        if request["op"] == "spawn":
            zygote = os.getpid()
            pid = os.fork()
            if pid == 0:
                sock.close()
                try:
                    _child(request, fds, zygote)
                finally:
                    os._exit(70)
            for fd in fds:
                os.close(fd)
            children.live.add(pid)
            reply: dict[str, Any] = {"pid": pid}
        else:
            deadline = None if request["timeout"] is None else time.monotonic() + request["timeout"]
            children.reap()
            while request["pid"] not in children.statuses and (
                    deadline is None or time.monotonic() < deadline):
                time.sleep(0.005)
                children.reap()
            reply = {"status": children.statuses.pop(request["pid"], None)}
        try:
            sock.send(json.dumps(reply).encode())
        except OSError:
            return  # the judge went away while we answered (an interrupted run)


if __name__ == "__main__":
    # `base SOCKET_FD JUDGE`: the zygotes' base; `worker READ_FD WRITE_FD`: a cold-started
    # worker.
    if sys.argv[1] == "base":
        try:
            serve_base(socket.socket(fileno=int(sys.argv[2])), int(sys.argv[3]))
        finally:
            os._exit(0)  # no interpreter teardown: the frozen imports are never collected
    else:
        run_worker(*map(int, sys.argv[2:5]))
