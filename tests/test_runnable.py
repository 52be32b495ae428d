"""The judge's own reading of how long a worker's threads wanted a CPU
(kdiff.sandbox.runnable), which tells a worker that computed through a timed-out call from
one that slept: the same reading for a spinning process and a sleeping one."""
from __future__ import annotations

import subprocess
import sys
import time

from kdiff.sandbox.runnable import STALL_SHARE, process_group, runnable_seconds

SPIN = "import time\nend = time.monotonic() + 5\nwhile time.monotonic() < end: pass"


def wanted_a_cpu(code: str, seconds: float = 0.4) -> float:
    """The share of `seconds` for which the threads of a process running `code` (in its own
    process group, found as a judge that is not root finds its worker's) wanted a CPU."""
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        time.sleep(0.3)  # past the interpreter's start
        assert process_group(proc.pid) == [proc.pid]
        before = runnable_seconds(process_group(proc.pid))
        time.sleep(seconds)
        after = runnable_seconds(process_group(proc.pid))
    finally:
        proc.kill()
        proc.wait()
    return (after - before) / seconds


def test_a_spinning_process_wants_a_cpu_throughout_and_a_sleeping_one_does_not():
    assert wanted_a_cpu(SPIN) > STALL_SHARE
    assert wanted_a_cpu("import time; time.sleep(5)") < STALL_SHARE


def test_no_reading_without_threads():
    assert runnable_seconds([]) is None
