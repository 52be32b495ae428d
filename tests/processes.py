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
