"""What other processes of the machine read of this one in /proc: its command line, which any
process that can name it reads (/proc/<pid>/cmdline), and what only a process allowed to
trace it reads (environ, mem, maps, fd). A worker reads the judge's as it reads any process's:
a CUDA worker has no PID namespace and, under a judge that is not root, the judge's uid; the
CPU's /proc is the host's."""

from __future__ import annotations

import ctypes

# /proc/<pid>/stat fields (proc(5), counted from 1) after the command name's closing ")" at
# field 2: arg_start and arg_end are fields 48 and 49.
_ARG_START_FIELD = 48 - 3
PR_SET_DUMPABLE = 4  # prctl(2)


def rewrite_command_line(args: list[str]) -> None:
    """This process's command line, as other processes read it, made `args` (cut to the room
    the original had, the rest zeros), written in place as setproctitle does. Python's own
    sys.argv is not changed."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[_ARG_START_FIELD]), int(fields[_ARG_START_FIELD + 1])
    except (OSError, IndexError, ValueError):
        return
    text = b"\0".join(a.encode("utf-8", "surrogateescape") for a in args)[: max(end - start - 1, 0)]
    ctypes.memmove(start, text.ljust(end - start, b"\0"), end - start)


def close_to_other_processes() -> None:
    """Only a process with CAP_SYS_PTRACE (root) may read this one's environment, memory,
    maps and file descriptors from now on, not one of the same uid (prctl PR_SET_DUMPABLE 0:
    proc(5), ptrace(2) "ptrace access mode checking"); this process itself still may. A child
    keeps it until it runs a new program. It also makes no core file."""
    libc = ctypes.CDLL(None, use_errno=True)  # the C library this process has loaded
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0)")
