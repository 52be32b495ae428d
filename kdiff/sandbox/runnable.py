"""How long a worker's threads wanted a CPU, read by the judge from the kernel's scheduler
statistics (/proc/PID/task/TID/schedstat), never from the worker: the time each ran on a
CPU plus the time each waited on a runqueue for one. A thread that computes is one or the
other the whole time, however loaded the machine; one that sleeps, waits on a lock or
blocks on a read is neither. So a call that ran past its timeout while its worker wanted a
CPU for a small part of it stalled; it was not slow."""

from __future__ import annotations

import os
from dataclasses import dataclass

# A timed-out call in which the worker's threads together wanted a CPU for less than this
# share of its wall time stalled. A computing thread wants one for all of it (1.0, on a CPU or
# waiting on a runqueue, whatever the load); the Triton interpreter computes on the calling
# thread from the call's start to its end. Half leaves the rest to what an honest call may
# wait on besides a CPU (page faults served from disk, a lazy import's reads), which takes
# milliseconds to seconds of a call timeout of minutes.
STALL_SHARE = 0.5
# The statistics are read only for a call still unanswered after this long (or this share of
# its timeout, if less), and the share judged from then on: most calls answer sooner, and a
# reading (the cgroups' process lists, a file per thread) cost the judge 0.26 ms, 2.5 of its
# 31 CPU seconds when read for every request of the CPU default job. A call that computes
# throughout wants a CPU for all of any part of it; a twentieth of a timeout moves its share
# by at most a twentieth.
STALL_WATCH_AFTER_S = 0.05
STALL_WATCH_SHARE = 1 / 20


@dataclass(frozen=True)
class RunnableReading:
    """runnable_seconds (None: no reading) at `at` (time.monotonic())."""

    at: float
    seconds: float | None


def runnable_seconds(pids: list[int]) -> float | None:
    """The seconds the threads of `pids` have run on a CPU or waited on a runqueue since
    each started; None where the kernel keeps no such statistics (no CONFIG_SCHED_INFO) or
    none of them could be read. Threads that ended are not counted."""
    total_ns, read = 0, False
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:  # ended
            continue
        for tid in threads:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    on_cpu, waiting, _ = f.read().split()
            except (OSError, ValueError):
                continue
            total_ns += int(on_cpu) + int(waiting)
            read = True
    return total_ns / 1e9 if read else None


def process_group(pgid: int) -> list[int]:
    """The processes of process group `pgid` (a worker started without a cgroup of its own:
    a judge that is not root)."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[2] == str(pgid):
            pids.append(int(name))
    return pids
