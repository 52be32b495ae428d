"""Confining a candidate's worker before it runs: `python -m kdiff.confine SPEC -- PROGRAM ARGS`.

The launcher applies the limits in SPEC (JSON, a `Confinement`) to itself, while it is still a
small single-threaded interpreter, and then runs PROGRAM in the confined state, which every
process PROGRAM starts inherits and cannot undo:

- resource limits: address space (CPU workers; on CUDA an address-space cap breaks the CUDA
  context), the size of any file it writes (its log included), no core files, and at most
  `max_tasks` processes and threads: RLIMIT_NPROC, counted in its own user namespace; the
  kernel exempts root from RLIMIT_NPROC in every namespace, so for root a pids cgroup that
  the judge makes (cgroup v1; none where the hierarchy is read-only, as in most containers);
- a new user and PID namespace (unprivileged on Linux): the launcher forks an init (PID 1 of
  the namespace) that runs PROGRAM as its child, and when that init dies, for any reason, the
  kernel kills every process left in the namespace: a child that left the process group
  with setsid() cannot outlive the worker, and no process outside can even be named (kill()
  of a judge's pid finds no such process);
- a network namespace with no interface up, inside that user namespace: no UDP or TCP
  packet leaves the worker;
- Landlock (Linux 5.13+; it works for root too): writes only beneath `writable` (the worker's
  own temporary folder and /dev); no TCP bind or connect (ABI 4+); no signals to, and no
  abstract-socket connections with, processes outside the worker's own domain (ABI 6+): not
  the judge, not another candidate's worker. Landlock also denies ptrace of outside processes,
  so /proc/<judge>/mem, environ and fd are closed to it.
Reads are not restricted: a candidate can read any file its user can (see kdiff.sandbox for
what is and is not contained). Each mechanism that the kernel refuses is skipped; the ones
in force are written to the first line of the program's log for the record.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import struct
import sys
from dataclasses import asdict, dataclass, field
from typing import Callable, NoReturn

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_NO_NEW_PRIVS = 38
CONTAINMENT_LINE = "kdiff.confine: in force: "

# Landlock (include/uapi/linux/landlock.h); the syscall numbers are the same on every arch.
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
FS_WRITE_FILE, FS_REMOVE_DIR, FS_REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
FS_MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
FS_REFER, FS_TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6


@dataclass
class Confinement:
    writable: list[str] = field(default_factory=list)
    memory_bytes: int | None = None
    max_tasks: int | None = None
    max_file_bytes: int | None = None  # any one file it writes, its log (stdout) included
    block_network: bool = True
    namespaces: bool = True
    landlock: bool = True
    # Task-count cgroups to join first (made by the judge: see task_cgroup); for root, whom
    # the kernel exempts from RLIMIT_NPROC.
    cgroups: list[str] = field(default_factory=list)
    # The pipe ends the program gets (the worker's channel to the judge): only the program
    # may hold them, so that the judge sees end-of-stream the moment the worker dies.
    pipe_fds: list[int] = field(default_factory=list)

    def to_arg(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_arg(cls, arg: str) -> "Confinement":
        return cls(**json.loads(arg))


_libc = ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent or disabled."""
    version = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                            ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _landlock(writable: list[str], block_network: bool) -> list[str]:
    abi = landlock_abi()
    if abi < 1:
        return []
    write = FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE
    write |= FS_REFER if abi >= 2 else 0
    write |= FS_TRUNCATE if abi >= 3 else 0
    net = NET_BIND_TCP | NET_CONNECT_TCP if block_network and abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    # struct landlock_ruleset_attr grew by one u64 per feature: pass only what the ABI knows.
    attr = struct.pack("<QQQ", write, net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    ruleset = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, attr, ctypes.c_size_t(len(attr)),
                            ctypes.c_uint32(0))
    if ruleset < 0:
        return []
    try:
        for path in writable:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            # A rule on a file (a device) may grant only the rights that apply to files.
            allowed = write if os.path.isdir(path) else write & (FS_WRITE_FILE | FS_TRUNCATE)
            try:
                rule = struct.pack("<Qi", allowed, fd)  # landlock_path_beneath_attr is packed
                if _libc.syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset),
                                 ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH), rule,
                                 ctypes.c_uint32(0)) < 0:
                    return []
            finally:
                os.close(fd)
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return []
        if _libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset),
                         ctypes.c_uint32(0)) < 0:
            return []
    finally:
        os.close(ruleset)
    applied = [f"landlock-fs(abi {abi})"]
    if net:
        applied.append("landlock-no-tcp")
    if scoped:
        applied.append("landlock-signal-scope")
    return applied


def _set_limit(which: int, value: int) -> bool:
    try:
        resource.setrlimit(which, (value, value))
        return True
    except (ValueError, OSError):
        return False


_PIDS_HIERARCHY = "/sys/fs/cgroup/pids"  # cgroup v1; v2 needs a delegated subtree


def task_cgroup(name: str, max_tasks: int) -> str | None:
    """A pids cgroup (v1) capping the tasks of whoever joins it, under this process's own;
    None where there is no such hierarchy or no right to write it. The caller removes it."""
    try:
        with open("/proc/self/cgroup") as f:
            own = next(line.split(":", 2)[2].strip() for line in f
                       if line.split(":")[1] == "pids")
        path = os.path.join(_PIDS_HIERARCHY, own.lstrip("/"), name)
        os.mkdir(path)
    except (OSError, StopIteration, IndexError):
        return None
    try:
        with open(os.path.join(path, "pids.max"), "w") as f:
            f.write(str(max_tasks))
    except OSError:
        remove_cgroup(path)
        return None
    return path


def remove_cgroup(path: str, patience: float = 2.0) -> None:
    """Removes an emptied cgroup; its last tasks may take a moment to be reaped."""
    import time
    deadline = time.monotonic() + patience
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)


def _no_network() -> bool:
    """A network namespace of its own, with no interface up (its loopback is down): no
    packet leaves, UDP included, which Landlock does not restrict. Asked apart from the user
    namespace, whose capabilities it needs, so that a refusal costs only itself."""
    return _libc.unshare(CLONE_NEWNET) == 0


def apply(spec: Confinement) -> tuple[list[str], bool]:
    """Confines this process. Returns the mechanisms in force, and whether a new PID
    namespace was entered (the next fork is its init)."""
    applied: list[str] = []
    root = os.geteuid() == 0  # asked now: in a new user namespace it reads as unmapped
    for path in spec.cgroups:  # first, while this process may still write cgroup files
        try:
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
            applied.append(f"tasks-cgroup {spec.max_tasks}")
        except OSError:
            pass
    try:  # the OOM killer takes the candidate before the judge
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
        applied.append("oom-first")
    except OSError:
        pass
    _set_limit(resource.RLIMIT_CORE, 0)  # a crash must not write a core file anywhere
    if spec.memory_bytes and _set_limit(resource.RLIMIT_AS, spec.memory_bytes):
        applied.append(f"address-space {spec.memory_bytes >> 20} MiB")
    if spec.max_file_bytes and _set_limit(resource.RLIMIT_FSIZE, spec.max_file_bytes):
        applied.append(f"file-size {spec.max_file_bytes >> 20} MiB")
    new_pid_ns = False
    if spec.namespaces:
        # The task cap must be set after unshare: the namespace records its creator's
        # RLIMIT_NPROC as the cap on everything its creator's user owns outside it.
        new_pid_ns = _libc.unshare(CLONE_NEWUSER | CLONE_NEWPID) == 0
        if new_pid_ns:
            applied.append("user+pid-namespace")
            if spec.block_network and _no_network():
                applied.append("net-namespace")
    if spec.max_tasks and not root:  # the kernel exempts root (any namespace)
        if _set_limit(resource.RLIMIT_NPROC, spec.max_tasks):
            applied.append(f"tasks {spec.max_tasks}")
    if spec.landlock:
        applied += _landlock(spec.writable, spec.block_network)
    return applied, new_pid_ns


def _reraise(status: int) -> NoReturn:
    """Ends this process the way a child with wait status `status` ended."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 1)


def _init(start: Callable[[], NoReturn], pipe_fds: list[int], status_w: int) -> NoReturn:
    """PID 1 of the namespace: runs the program as its child, reaps orphans, and reports the
    program's wait status to the launcher. Its exit tears the namespace down."""
    child = os.fork()
    if child == 0:
        os.close(status_w)
        start()
    for fd in pipe_fds:
        os.close(fd)
    while True:
        pid, status = os.wait()
        if pid == child:
            os.write(status_w, struct.pack("<i", status))
            os._exit(0)


def run_confined(spec: Confinement, start: Callable[[], NoReturn]) -> NoReturn:
    """Confines this process, then runs `start` (which execs or exits, never returns) in
    the confined state; this process ends the way the program does."""
    applied, new_pid_ns = apply(spec)
    # First line of the worker's log, where the judge reads it (CandidateProcess.containment);
    # not in the environment, where it would tell a candidate that kdiff runs it.
    os.write(2, f"{CONTAINMENT_LINE}{','.join(applied) or 'none'}\n".encode())
    if not new_pid_ns:
        start()
    status_r, status_w = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(status_r)
        _init(start, spec.pipe_fds, status_w)
    os.close(status_w)
    for fd in spec.pipe_fds:
        os.close(fd)
    data = os.read(status_r, 4)
    _, init_status = os.waitpid(init, 0)
    # The program's own status when the init reported it; else the init's (killed).
    _reraise(struct.unpack("<i", data)[0] if len(data) == 4 else init_status)


def main(argv: list[str]) -> None:
    spec_arg, sep, program = argv[0], argv[1], argv[2:]
    if sep != "--" or not program:
        raise SystemExit("usage: python -m kdiff.confine SPEC -- PROGRAM [ARGS]")
    run_confined(Confinement.from_arg(spec_arg), lambda: os.execv(program[0], program))


if __name__ == "__main__":
    main(sys.argv[1:])
