"""The processes a test looks for after a run: those a candidate named (PR_SET_NAME)."""
from __future__ import annotations

import os
from pathlib import Path


def named(name: str) -> list[int]:
    """The pids of the processes whose name (/proc/PID/comm) is `name`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == name:
                found.append(int(pid))
        except OSError:
            pass
    return found


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def descendants(root: int) -> dict[int, str]:
    """Every process below `root` now, as pid -> start time (to tell a reused pid)."""
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if (fields := _stat(int(pid))) is not None:
            parents[int(pid)] = (int(fields[1]), fields[19])
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, start) in parents.items():
            if ppid == parent and pid not in found:
                found[pid] = start
                frontier.append(pid)
    return found


def alive(processes: dict[int, str]) -> list[int]:
    """Those of `processes` (from descendants) still running: not gone, not a zombie."""
    return [pid for pid, start in processes.items()
            if (fields := _stat(pid)) is not None and fields[19] == start and fields[0] != "Z"]
