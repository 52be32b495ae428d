"""Confining a candidate's worker before it runs: `python -m kdiff.sandbox.confine SPEC -- PROGRAM ARGS`.

The launcher applies the limits in SPEC (JSON, a `Confinement`) to itself, while it is still a
small single-threaded interpreter, and then runs PROGRAM in the confined state, which every
process PROGRAM starts inherits and cannot undo:

- cgroups that the judge made for it (WorkerCgroup; root only): a memory limit that counts
  shared memory and memfd files, and a task cap (the kernel exempts root from RLIMIT_NPROC);
- resource limits: address space (CPU workers; on CUDA an address-space cap breaks the CUDA
  context), the size of any file it writes (its log included), no core files, and at most
  `max_tasks` processes and threads (RLIMIT_NPROC, for a user that is not root);
- an unprivileged uid of its own (for root: _drop_to_own_uid), owning only its folder, and a
  seccomp filter (seccomp_program): no ptrace, no IP sockets, no new namespaces. Neither needs
  namespaces or Landlock, which the CUDA driver fails under;
- a new PID namespace (made by root before the uid is dropped; otherwise with a new user
  namespace, unprivileged): the launcher forks an init (PID 1 of the namespace) that runs
  PROGRAM as its child, and when that init dies, for any reason, the kernel kills every
  process left in the namespace, and no process outside can even be named (kill() of a
  judge's pid finds no such process);
- with it, a network namespace with no interface up: no UDP or TCP packet leaves the worker;
- Landlock (Linux 5.13+; it works for root too): writes only beneath `writable` (the worker's
  own temporary folder and /dev); no TCP bind or connect (ABI 4+); no signals to, and no
  abstract-socket connections with, processes outside the worker's own domain (ABI 6+): not
  the judge, not another candidate's worker. Landlock also denies ptrace of outside processes,
  so /proc/<judge>/mem, environ and fd are closed to it;
- PR_SET_PDEATHSIG: every process of the launcher's dies with its parent.
Reads: a worker's own uid reads what any user may, unless it keeps the judge's read capability
for a private file it needs (`read_capability`); Landlock also keeps it out of `unreadable`
(see kdiff.sandbox.process for what is and is not contained). Each mechanism that the kernel refuses is skipped; the ones
in force are written to the first line of the program's log for the record.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import shutil
import signal
import stat
import struct
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, NoReturn

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_NO_NEW_PRIVS = 38
CONTAINMENT_LINE = "kdiff.sandbox.confine: in force: "
CLUSTER_VARIABLES = ("RAY_",)  # a Ray worker's (the judge's, under --executor ray)

# Landlock (include/uapi/linux/landlock.h); the syscall numbers are the same on every arch.
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
FS_WRITE_FILE, FS_READ_FILE = 1 << 1, 1 << 2
FS_REMOVE_DIR, FS_REMOVE_FILE = 1 << 4, 1 << 5
FS_MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
FS_REFER, FS_TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6


@dataclass
class Confinement:
    writable: list[str] = field(default_factory=list)
    # Folders it may not read (the judges' private cache): everything else stays readable.
    unreadable: list[str] = field(default_factory=list)
    memory_bytes: int | None = None
    max_tasks: int | None = None
    max_file_bytes: int | None = None  # any one file it writes, its log (stdout) included
    block_network: bool = True
    namespaces: bool = True
    landlock: bool = True
    # An unprivileged uid of its own (for root; see _drop_to_own_uid), owning the folders in
    # `own`, and a seccomp filter (see seccomp_program): containment that needs neither
    # namespaces nor Landlock, which the CUDA driver fails under.
    own_uid: bool = False
    own: list[str] = field(default_factory=list)
    # Whether that uid keeps CAP_DAC_READ_SEARCH (reads_need_capability): only where a file
    # it must read is private to the judge, since the capability opens every folder,
    # `unreadable` too where Landlock is not in force (CUDA).
    read_capability: bool = False
    seccomp: bool = False
    # The cgroups to join first (made by the judge: WorkerCgroup): a memory limit that
    # counts shared memory; a task cap for root, whom the kernel exempts from RLIMIT_NPROC.
    cgroups: list[str] = field(default_factory=list)
    # The process whose death ends this one (PR_SET_PDEATHSIG): its launcher's parent.
    parent: int | None = None
    # The pipe ends the program gets (the worker's channel to the judge): only the program
    # may hold them, so that the judge sees end-of-stream the moment the worker dies.
    pipe_fds: list[int] = field(default_factory=list)
    # The folder the program runs in, entered once confined. The launcher starts elsewhere,
    # in a folder no candidate writes: `python -m` imports from the folder it starts in, and
    # a worker's own folder, which outlives a restart, held a `kdiff` package its candidate
    # wrote, which the launcher (root, not yet confined) ran
    # (tests/hostile/plants_a_kdiff_package.py).
    cwd: str | None = None

    def to_arg(self) -> str:
        return json.dumps(asdict(self))

    def command(self, program: list[str]) -> list[str]:
        """The command line that runs `program` (its argv) confined so: this module's main."""
        return [sys.executable, "-m", "kdiff.sandbox.confine", self.to_arg(), "--", *program]

    @classmethod
    def from_arg(cls, arg: str) -> "Confinement":
        return cls(**json.loads(arg))


_libc = ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent or disabled."""
    version = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                            ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def readable_beside(unreadable: list[str]) -> list[str]:
    """The paths whose hierarchies hold everything but `unreadable`: for each folder above
    an unreadable one, its other entries (Landlock grants by hierarchy, never denies)."""
    hidden = {os.path.realpath(p) for p in unreadable}
    above = {a for p in hidden for a in map(str, Path(p).parents)}

    def reaches_hidden(path: str) -> bool:  # a link resolves where it points (pytest-current)
        real = os.path.realpath(path)
        return real in above or any(real == h or real.startswith(h + os.sep) for h in hidden)

    paths = []
    for folder in sorted(above):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        paths += [path for path in (os.path.join(folder, n) for n in names)
                  if not reaches_hidden(path)]
    return paths


def _add_rules(ruleset: int, paths: list[str], allowed: int) -> bool:
    """Grants `allowed` beneath each of `paths` (those it may not open are left out)."""
    for path in paths:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        # A rule on a file (a device) may grant only the rights that apply to files.
        on_file = allowed & (FS_WRITE_FILE | FS_TRUNCATE | FS_READ_FILE)
        try:
            rule = struct.pack("<Qi", allowed if os.path.isdir(path) else on_file, fd)
            if _libc.syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset),
                             ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH), rule,
                             ctypes.c_uint32(0)) < 0:
                return False
        finally:
            os.close(fd)
    return True


def _landlock(writable: list[str], readable: list[str] | None, block_network: bool
              ) -> list[str]:
    """`readable`: with a list, reading files is confined to it (and `writable`); None, not.
    Folders stay listable everywhere (a name is no answer), so that listing one above an
    unreadable folder (/, a home) fails nothing."""
    abi = landlock_abi()
    if abi < 1:
        return []
    read = FS_READ_FILE if readable is not None else 0
    write = FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE
    write |= FS_REFER if abi >= 2 else 0
    write |= FS_TRUNCATE if abi >= 3 else 0
    net = NET_BIND_TCP | NET_CONNECT_TCP if block_network and abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    # struct landlock_ruleset_attr grew by one u64 per feature: pass only what the ABI knows.
    attr = struct.pack("<QQQ", write | read, net, scoped)[: 8 if abi < 4 else 16 if abi < 6
                                                           else 24]
    ruleset = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, attr, ctypes.c_size_t(len(attr)),
                            ctypes.c_uint32(0))
    if ruleset < 0:
        return []
    try:
        if not (_add_rules(ruleset, writable, write | read)
                and _add_rules(ruleset, readable or [], read)):
            return []
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return []
        if _libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset),
                         ctypes.c_uint32(0)) < 0:
            return []
    finally:
        os.close(ruleset)
    applied = [f"landlock-fs(abi {abi})"]
    if read:
        applied.append("landlock-unreadable-judge-cache")
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


_CGROUP_ROOT = "/sys/fs/cgroup"
# A worker's CPU share in cgroup v1: the default, one busy process's worth (v2's cpu.weight
# is left at its default, 100, the same).
CPU_SHARES = 1024


def _own_cgroup(controller: str) -> str | None:
    """This process's cgroup in the v1 hierarchy of `controller`, or in v2 ("")."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            if controller in names.split(",") or (controller == "" and names == ""):
                return path
    return None


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


@dataclass
class WorkerCgroup:
    """A worker's own cgroup, made by the judge (root) beside its own: a memory limit that
    counts every page charged to the worker (anonymous, page cache, tmpfs and memfd pages,
    none of which RLIMIT_AS sees unless mapped) with no swap, and a task cap. The kernel's
    out-of-memory killer then takes a process of this group when it reaches the limit,
    never a neighbour. cgroup v2 where this process may enable memory and pids for its
    children; else the v1 memory and pids hierarchies. Where the cpu controller can be had
    too, a CPU share of its own: the scheduler then shares the cores between workers, not
    between processes or sessions (autogroups), so that a worker's spinning children take
    no more of a core from a worker judged beside it than one busy worker does
    (tests/fixtures/cross_candidate/runs/beside_a_spinner: an honest kernel failed `hang`
    beside one)."""

    paths: list[str]  # the worker joins each (cgroup.procs)
    memory: str | None  # where its memory counters are
    v2: bool
    cpu: str | None = None  # where its CPU share is set (v1; in v2 it is `paths[0]`)

    @classmethod
    def create(cls, name: str, memory_bytes: int | None,
               max_tasks: int | None) -> "WorkerCgroup | None":
        made = cls._v2(name) or cls._v1(name, memory_bytes is not None, max_tasks is not None)
        if made is None:
            return None
        try:
            made._limit(memory_bytes, max_tasks)
        except OSError:
            made.remove()
            return None
        return made

    @classmethod
    def _v2(cls, name: str) -> "WorkerCgroup | None":
        for parent in _v2_parents():
            try:
                with open(os.path.join(parent, "cgroup.subtree_control")) as f:
                    enabled = set(f.read().split())
                if not {"memory", "pids"} <= enabled:
                    # Refused (EBUSY) where the parent holds processes itself, unless it is
                    # the root: then the next parent, the root, is tried.
                    _write(os.path.join(parent, "cgroup.subtree_control"), "+memory +pids")
                if "cpu" not in enabled:
                    with contextlib.suppress(OSError):  # a share where it can be had
                        _write(os.path.join(parent, "cgroup.subtree_control"), "+cpu")
                path = os.path.join(parent, name)
                os.mkdir(path)
            except OSError:
                continue
            return cls([path], path, True)
        return None

    @classmethod
    def _v1(cls, name: str, memory: bool, tasks: bool) -> "WorkerCgroup | None":
        paths, memory_path, cpu_path = [], None, None
        for controller, wanted in (("memory", memory), ("pids", tasks), ("cpu", True)):
            try:
                own = _own_cgroup(controller)
                if not wanted or own is None:
                    continue
                path = os.path.join(_CGROUP_ROOT, controller, own.lstrip("/"), name)
                os.mkdir(path)
            except OSError:  # no such hierarchy, or read-only (most containers)
                continue
            paths.append(path)
            memory_path = path if controller == "memory" else memory_path
            cpu_path = path if controller == "cpu" else cpu_path
        return cls(paths, memory_path, False, cpu_path) if paths else None

    def _limit(self, memory_bytes: int | None, max_tasks: int | None) -> None:
        for path in self.paths:
            if self.v2:
                if memory_bytes is not None:
                    _write(f"{path}/memory.max", str(memory_bytes))
                    _write(f"{path}/memory.oom.group", "1")  # the whole worker goes
                    try:  # exists only where swap is accounted
                        _write(f"{path}/memory.swap.max", "0")
                    except FileNotFoundError:
                        pass
                if max_tasks is not None:
                    _write(f"{path}/pids.max", str(max_tasks))
            elif path == self.cpu:
                _write(f"{path}/cpu.shares", str(CPU_SHARES))
            elif path == self.memory:
                _write(f"{path}/memory.limit_in_bytes", str(memory_bytes))
                try:  # memory plus swap: exists only where swap is accounted
                    _write(f"{path}/memory.memsw.limit_in_bytes", str(memory_bytes))
                except FileNotFoundError:
                    pass
            else:
                _write(f"{path}/pids.max", str(max_tasks))

    def oom_kills(self) -> int:
        """How many of its processes the out-of-memory killer has taken."""
        if self.memory is None:
            return 0
        name = "memory.events" if self.v2 else "memory.oom_control"
        try:
            with open(os.path.join(self.memory, name)) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def procs(self) -> list[int]:
        pids: set[int] = set()
        for path in self.paths:
            try:
                with open(os.path.join(path, "cgroup.procs")) as f:
                    pids.update(int(line) for line in f if line.strip())
            except OSError:
                pass
        return sorted(pids)

    def kill(self, patience: float = 2.0) -> None:
        """SIGKILL to every process in it, whatever its session or process group: those a
        candidate detached with setsid() too. v1 has no cgroup.kill: the processes are
        killed until none is left (the task cap bounds what a fork storm adds meanwhile)."""
        import time
        if self.v2:
            try:
                _write(f"{self.paths[0]}/cgroup.kill", "1")
            except OSError:
                pass
        deadline = time.monotonic() + patience
        while (pids := self.procs()) and time.monotonic() < deadline:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        for path in self.paths:
            remove_cgroup(path)


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


# -- what a judge leaves behind ----------------------------------------------------------
# A judge process keeps its workers' folders and logs in one folder, JUDGE_PREFIX + its tag
# (pid and start time, so that a reused pid is another judge), and names its workers'
# cgroups after it. Its zygote removes them when the judge dies, however it dies; a judge
# that starts removes those of judges that are gone (a cold start has no zygote, and a
# zygote can be SIGKILLed too). The name is neutral: it is in the worker's working directory,
# where it must not tell a candidate that kdiff runs it.
JUDGE_PREFIX = "tmpj-"


def judge_tag(pid: int) -> str | None:
    """JUDGE_PREFIX, the pid and its start time (clock ticks since boot); None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
    return f"{JUDGE_PREFIX}{pid}-{start}"


def _v2_parents() -> list[str]:
    """Where a cgroup v2 hierarchy may hold this process's workers' cgroups: beside its own,
    else at the root (exempt from the rule that a cgroup with processes of its own has no
    children with controllers: a judge in a cgroup beside other processes, as on the H200)."""
    if not os.path.exists(f"{_CGROUP_ROOT}/cgroup.controllers"):
        return []
    try:
        own = _own_cgroup("")
    except OSError:
        own = None
    beside = [os.path.join(_CGROUP_ROOT, own.lstrip("/"))] if own not in (None, "/") else []
    return [p for p in [*beside, _CGROUP_ROOT] if os.path.isdir(p)]


def _worker_cgroup_parents() -> list[str]:
    """Where this process makes its workers' cgroups (WorkerCgroup)."""
    if os.path.exists(f"{_CGROUP_ROOT}/cgroup.controllers"):
        return _v2_parents()
    parents = []
    for controller in ("memory", "pids", "cpu"):
        try:
            own = _own_cgroup(controller)
        except OSError:
            continue
        path = os.path.join(_CGROUP_ROOT, controller, (own or "").lstrip("/"))
        if own is not None and os.path.isdir(path):
            parents.append(path)
    return parents


def remove_leftovers(tag: str, tmp: str) -> None:
    """What the judge `tag` left: its workers' cgroups (their processes killed first), its
    folder, and files its workers' uids left in the shared temporary folders."""
    for parent in _worker_cgroup_parents():
        try:
            names = [n for n in os.listdir(parent) if n.startswith(f"{tag}-")]
        except OSError:
            continue
        for name in names:
            WorkerCgroup([os.path.join(parent, name)], None, False).kill()
            remove_cgroup(os.path.join(parent, name))
    shutil.rmtree(os.path.join(tmp, tag), ignore_errors=True)
    remove_orphaned_files()


def remove_stale_judges(tmp: str) -> None:
    """remove_leftovers of every judge that is gone."""
    tags = set()
    for parent in [tmp, *_worker_cgroup_parents()]:
        try:
            tags.update(JUDGE_PREFIX + "-".join(n[len(JUDGE_PREFIX):].split("-")[:2])
                        for n in os.listdir(parent) if n.startswith(JUDGE_PREFIX))
        except OSError:
            continue
    for tag in tags:
        pid = tag[len(JUDGE_PREFIX):].split("-")[0]
        if not pid.isdigit() or judge_tag(int(pid)) != tag:
            remove_leftovers(tag, tmp)


# The folders anyone may write, where a worker running as its own uid can leave files.
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")


def _orphaned(uid: int) -> bool:
    """Whether `uid` is a worker's (worker_uid) whose launcher is gone."""
    return UID_BASE <= uid < UID_BASE + PID_MAX and not os.path.exists(f"/proc/{uid - UID_BASE}")


def remove_orphaned_files() -> None:
    """Removes what workers' uids (worker_uid) left in SHARED_FOLDERS and System V shared
    memory once their launcher is gone: a worker's own folder is the judge's to remove,
    these are not."""
    try:
        with open("/proc/sysvipc/shm") as f:
            # key shmid perms size cpid lpid nattch uid ...: a segment outlives its creator
            rows = [line.split() for line in list(f)[1:]]
    except OSError:
        rows = []
    for row in rows:
        if len(row) > 7 and _orphaned(int(row[7])):
            _libc.shmctl(int(row[1]), 0, None)  # IPC_RMID
    for folder in SHARED_FOLDERS:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                uid = entry.stat(follow_symlinks=False).st_uid
            except OSError:
                continue
            if not _orphaned(uid):
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass


# -- an unprivileged user of its own, and a seccomp filter ----------------------------------
def readable_by_anyone(path: str) -> bool:
    """Whether a process of another uid, in no group of the owner's and with no capability,
    may read `path`: it (a folder: and list it) and every folder above it open to others.
    A path that does not exist needs nothing."""
    try:
        real = os.path.realpath(path)
        mode = os.stat(real).st_mode
        need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
        if mode & need != need:
            return False
        folder = os.path.dirname(real)
        while True:
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                return False
            if folder == os.path.dirname(folder):
                return True
            folder = os.path.dirname(folder)
    except OSError:
        return True


def reads_need_capability(paths: list[str]) -> list[str]:
    """Of `paths`, those a worker's own uid could not read without CAP_DAC_READ_SEARCH."""
    return [p for p in paths if not readable_by_anyone(p)]


# Each worker runs as a uid of its own: UID_BASE plus the launcher's pid, unique among live
# workers since pids are. pid_max is at most 2**22 (4194304), so the range ends below 2**31
# and clear of the uids distributions hand out (below 2**16, or 100000 + 65536k for
# subordinate ranges of the first users).
UID_BASE = 1_800_000_000
PID_MAX = 1 << 22
PR_SET_PDEATHSIG, PR_SET_KEEPCAPS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 1, 8, 47, 2
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
CAP_DAC_READ_SEARCH = 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
SYS_CAPSET = 126 if os.uname().machine == "x86_64" else 91


def worker_uid(launcher_pid: int) -> int:
    return UID_BASE + launcher_pid


def _chown_tree(folder: str, uid: int) -> None:
    os.chown(folder, uid, uid)
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            os.chown(os.path.join(top, name), uid, uid, follow_symlinks=False)


def _device_groups(writable: list[str]) -> list[int]:
    """The groups that own the device files it may write (/dev/nvidia* where the driver
    made them 0660 for a group), root's excepted."""
    groups = set()
    for path in writable:
        try:
            if path.startswith("/dev/") and not os.path.isdir(path):
                groups.add(os.stat(path).st_gid)
        except OSError:
            pass
    return sorted(groups - {0})


def _drop_to_own_uid(own: list[str], groups: list[int], read_capability: bool) -> list[str]:
    """Becomes uid (and gid) worker_uid(pid), owner of the folders in `own` and of nothing
    else: it writes only where any user may, signals and traces no process of another uid,
    and reads what any user may ("uid-reads"). With `read_capability` it keeps one
    capability, CAP_DAC_READ_SEARCH (ambient, so that the programs it runs keep it too), for
    files of the judge's that only their owner may read: it then reads whatever the judge
    reads, and only Landlock keeps it out of a folder. Writes are not reads: that capability
    grants none."""
    uid = worker_uid(os.getpid())
    try:
        for folder in own:
            _chown_tree(folder, uid)
        # Without KEEPCAPS, leaving uid 0 clears every capability.
        if read_capability and _libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
            return []
        os.setgroups(groups)
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    except OSError:
        return []
    if not read_capability:
        return ["uid", "uid-reads"]
    # struct __user_cap_header_struct {u32 version; int pid}; two __user_cap_data_struct
    # {u32 effective, permitted, inheritable} (capabilities 0-31, then 32-63).
    header = struct.pack("<Ii", _LINUX_CAPABILITY_VERSION_3, 0)
    keep = 1 << CAP_DAC_READ_SEARCH
    data = struct.pack("<6I", keep, keep, keep, 0, 0, 0)
    if (_libc.syscall(SYS_CAPSET, header, data) == 0
            and _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH, 0, 0) == 0):
        os.environ["HOME"] = own[0] if own else "/"
        return ["uid"]  # its own: one per worker
    return ["uid", "uid-reads"]  # the capability refused: it reads what any user may


# (AUDIT_ARCH_*, syscall numbers) of the architectures the filter knows; elsewhere it is not
# installed (and `containment` does not name it).
_SECCOMP_ARCH = {
    "x86_64": (0xC000003E, dict(
        ptrace=101, process_vm_readv=310, process_vm_writev=311, open_by_handle_at=304,
        bpf=321, perf_event_open=298, userfaultfd=323, unshare=272, setns=308, keyctl=250,
        add_key=248, request_key=249, io_uring_setup=425, io_uring_enter=426,
        io_uring_register=427, clone3=435, clone=56, socket=41)),
    "aarch64": (0xC00000B7, dict(
        ptrace=117, process_vm_readv=270, process_vm_writev=271, open_by_handle_at=265,
        bpf=280, perf_event_open=241, userfaultfd=282, unshare=97, setns=268, keyctl=219,
        add_key=217, request_key=218, io_uring_setup=425, io_uring_enter=426,
        io_uring_register=427, clone3=435, clone=220, socket=198)),
}
# Refused outright: reaching into other processes (ptrace, their memory), kernel surfaces a
# kernel needs none of (BPF, perf counters, userfaultfd, keyrings, open_by_handle_at, which
# the read capability would otherwise open), new namespaces (their capabilities undo the
# uid), and io_uring (it opens sockets without socket(2)).
_DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "open_by_handle_at", "bpf",
           "perf_event_open", "userfaultfd", "unshare", "setns", "keyctl", "add_key",
           "request_key", "io_uring_setup", "io_uring_enter", "io_uring_register")
_AF_INET, _AF_INET6, _AF_PACKET = 2, 10, 17  # no network; Unix sockets stay (the driver)
_CLONE_NEW = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
_NR, _ARCH, _ARG0 = 0, 4, 16  # args[0]'s low 32 bits (little-endian)


def seccomp_program(machine: str) -> list[tuple[int, int, int, int]] | None:
    """The classic-BPF filter as (code, jt, jf, k) instructions; None for an unknown arch."""
    if machine not in _SECCOMP_ARCH:
        return None
    arch, nr = _SECCOMP_ARCH[machine]
    errno_ = lambda e: _RET_ERRNO | e  # noqa: E731
    prog = [(_LD_W_ABS, 0, 0, _ARCH),
            (_JEQ, 1, 0, arch),
            (_RET, 0, 0, errno_(38)),  # another ABI of this CPU (i386 via int 0x80): ENOSYS
            (_LD_W_ABS, 0, 0, _NR),
            (_JGE, 0, 1, 0x40000000),
            (_RET, 0, 0, errno_(38))]  # the x32 ABI's numbers
    for name in _DENIED:
        prog += [(_JEQ, 0, 1, nr[name]), (_RET, 0, 0, errno_(1))]  # EPERM
    # clone3 passes its flags in memory a filter cannot read: ENOSYS, and the C library
    # falls back to clone, whose flags it can.
    prog += [(_JEQ, 0, 1, nr["clone3"]), (_RET, 0, 0, errno_(38))]
    prog += [(_JEQ, 0, 4, nr["clone"]), (_LD_W_ABS, 0, 0, _ARG0), (_JSET, 0, 1, _CLONE_NEW),
             (_RET, 0, 0, errno_(1)), (_RET, 0, 0, _RET_ALLOW)]
    families = (_AF_INET, _AF_INET6, _AF_PACKET)
    prog += [(_JEQ, 0, len(families) + 3, nr["socket"]), (_LD_W_ABS, 0, 0, _ARG0)]
    prog += [(_JEQ, len(families) - i, 0, f) for i, f in enumerate(families)]
    prog += [(_RET, 0, 0, _RET_ALLOW), (_RET, 0, 0, errno_(1))]
    prog.append((_RET, 0, 0, _RET_ALLOW))
    return prog


def _seccomp() -> list[str]:
    prog = seccomp_program(os.uname().machine)
    if prog is None:
        return []
    code = b"".join(struct.pack("<HBBI", *ins) for ins in prog)
    buffer = ctypes.create_string_buffer(code, len(code))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(prog), ctypes.addressof(buffer))
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return []
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return []
    return ["seccomp"]


def die_with(parent: int, sig: int = signal.SIGKILL) -> bool:
    """This process gets `sig` when `parent` (its parent at fork) dies; False if it already
    has. Set after the last change of credentials (which clears it). The kernel sends it when
    the parent's thread that forked it ends: a process started from a thread must be done
    before that thread ends. The init of a new PID
    namespace sees its parent, outside it, as pid 0 while it lives and after."""
    _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    return os.getppid() in (parent, 0)


def _cgroup_mechanisms(path: str) -> list[str]:
    """What a joined cgroup enforces, read from its limit files."""
    found = []
    for name, what in (("memory.max", "memory-cgroup"), ("memory.limit_in_bytes", "memory-cgroup"),
                       ("pids.max", "tasks-cgroup"), ("cpu.shares", "cpu-cgroup"),
                       ("cpu.weight", "cpu-cgroup")):
        try:
            with open(f"{path}/{name}") as f:
                value = f.read().strip()
        except OSError:
            continue
        if value.isdigit() and int(value) < 1 << 62:  # "max", or v1's "no limit" (2**63 - page)
            found.append(f"{what} {int(value) >> 20} MiB" if what == "memory-cgroup"
                         else f"{what} {value}")
    return found


def _no_network(spec: Confinement) -> list[str]:
    """A network namespace of its own, with no interface up (its loopback is down): no
    packet leaves, UDP included, which Landlock does not restrict. Asked apart from the PID
    namespace (and, for a user that is not root, inside its user namespace, whose
    capabilities it needs), so that a refusal costs only itself."""
    if spec.block_network and _libc.unshare(CLONE_NEWNET) == 0:
        return ["net-namespace"]
    return []


def apply(spec: Confinement) -> tuple[list[str], bool]:
    """Confines this process. Returns the mechanisms in force, and whether a new PID
    namespace was entered (the next fork is its init)."""
    applied: list[str] = []
    root = os.geteuid() == 0  # asked now: in a new user namespace it reads as unmapped
    # Listed now, while this process may still read every folder above them.
    readable = readable_beside(spec.unreadable) if spec.unreadable else None
    for path in spec.cgroups:  # first, while this process may still write cgroup files
        try:
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        except OSError:
            continue
        applied += _cgroup_mechanisms(path)
    _set_limit(resource.RLIMIT_CORE, 0)  # a crash must not write a core file anywhere
    if spec.memory_bytes and _set_limit(resource.RLIMIT_AS, spec.memory_bytes):
        counted = any(m.startswith("memory-cgroup") for m in applied)
        applied.append(f"address-space {spec.memory_bytes >> 20} MiB"
                       + ("" if counted else " (shared memory not counted)"))
    if spec.max_file_bytes and _set_limit(resource.RLIMIT_FSIZE, spec.max_file_bytes):
        applied.append(f"file-size {spec.max_file_bytes >> 20} MiB")
    new_pid_ns = False
    if spec.own_uid and root:
        # Root makes the PID namespace itself: a user namespace would take the worker's read
        # capability (kept for the init namespace's files) away.
        if spec.namespaces and _libc.unshare(CLONE_NEWPID) == 0:
            new_pid_ns = True
            applied.append("pid-namespace")
            applied += _no_network(spec)
        dropped = _drop_to_own_uid(spec.own, _device_groups(spec.writable),
                                   spec.read_capability)
        applied += dropped
        root = root and not dropped
    if spec.namespaces and not new_pid_ns:
        # The task cap must be set after unshare: the namespace records its creator's
        # RLIMIT_NPROC as the cap on everything its creator's user owns outside it.
        new_pid_ns = _libc.unshare(CLONE_NEWUSER | CLONE_NEWPID) == 0
        if new_pid_ns:
            applied.append("user+pid-namespace")
            applied += _no_network(spec)
    if spec.max_tasks and not root:  # the kernel exempts root (any namespace)
        if _set_limit(resource.RLIMIT_NPROC, spec.max_tasks):
            applied.append(f"tasks {spec.max_tasks}")
    if spec.landlock:
        applied += _landlock(spec.writable, readable, spec.block_network)
    if spec.seccomp:
        applied += _seccomp()
    if spec.parent is not None:
        if not die_with(spec.parent):
            os._exit(1)
        applied.append("dies-with-parent")
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
    init = os.getpid()
    child = os.fork()
    if child == 0:
        os.close(status_w)
        if not die_with(init):
            os._exit(1)
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
    if spec.cwd is not None:
        os.chdir(spec.cwd)
    for name in [n for n in os.environ if n.startswith(CLUSTER_VARIABLES)]:
        del os.environ[name]  # where the cluster's sockets and tokens are: not its business
    # First line of the worker's log, where the judge reads it (CandidateProcess.containment);
    # not in the environment, where it would tell a candidate that kdiff runs it.
    os.write(2, f"{CONTAINMENT_LINE}{','.join(applied) or 'none'}\n".encode())
    if not new_pid_ns:
        start()
    status_r, status_w = os.pipe()
    launcher = os.getpid()
    init = os.fork()
    if init == 0:
        os.close(status_r)
        if not die_with(launcher):
            os._exit(1)
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
        raise SystemExit("usage: python -m kdiff.sandbox.confine SPEC -- PROGRAM [ARGS]")
    run_confined(Confinement.from_arg(spec_arg), lambda: os.execv(program[0], program))


if __name__ == "__main__":
    main(sys.argv[1:])
