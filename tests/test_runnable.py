"""The judge's own reading of how long a worker's threads wanted a CPU
(kdiff.sandbox.runnable), which tells a worker that computed through a timed-out call from
one that slept: the same reading for a spinning process and a sleeping one."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from kdiff.sandbox import process as sandbox
from kdiff.sandbox import protocol
from kdiff.sandbox.process import CandidateProcess, CandidateTimeout, SandboxLimits
from kdiff.sandbox.runnable import STALL_SHARE, process_group, runnable_seconds

HOSTILE = Path(__file__).parent / "hostile"

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


SLEEPS_AT_ONE_ROW = '''
import time
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if x.shape[0] == 1:
            time.sleep(10 ** 6)
        return x + x
'''


def test_the_statistics_are_read_for_an_overdue_call_only(tmp_path, monkeypatch):
    """A call answered at once costs the judge no reading; one that sleeps past its timeout
    is read when overdue and at the timeout, and stalled."""
    reads = []

    def counted(pids: list[int]) -> float | None:
        reads.append(pids)
        return runnable_seconds(pids)

    monkeypatch.setattr(sandbox, "runnable_seconds", counted)
    monkeypatch.setattr(sandbox, "STALL_WATCH_AFTER_S", 0.4)  # answered well within, loaded
    monkeypatch.setattr(sandbox, "STALL_WATCH_SHARE", 0.4)
    candidate = tmp_path / "sleeps.py"
    candidate.write_text(SLEEPS_AT_ONE_ROW)
    limits = SandboxLimits(call_timeout=1.0)
    with CandidateProcess(HOSTILE / "problem.py", candidate, limits=limits) as worker:
        worker.request("build", key="c", role="candidate", seed=0, dtype="float32",
                       init_inputs=[])
        reads.clear()
        worker.request("call", key="c", inputs=[torch.randn(4, 8)])
        assert reads == []
        with pytest.raises(CandidateTimeout) as timed_out:
            worker.request("call", key="c", inputs=[torch.randn(1, 8)])
    assert len(reads) == 2
    assert timed_out.value.stalled, timed_out.value.detail
    assert "its threads wanted a CPU for" in timed_out.value.detail


def test_a_reply_stopped_midway_is_overdue_once_and_a_whole_one_is_not():
    """Half a header, then nothing (a worker stalled mid-reply): overdue all the same."""
    overdue: list[str] = []
    for written, name in ((b"\0" * 4, "half"), (protocol.encode({"ok": 1}), "whole")):
        read_end, write_end = os.pipe()
        try:
            protocol.write_all(write_end, written if isinstance(written, list) else [written])
            watch = protocol.Overdue(0.05, lambda name=name: overdue.append(name))
            try:
                protocol.read_message(read_end, 0.3, trusted=False, overdue=watch)
            except protocol.ChannelTimeout:
                overdue.append(f"{name} timed out")
        finally:
            os.close(read_end)
            os.close(write_end)
    assert overdue == ["half", "half timed out"]
