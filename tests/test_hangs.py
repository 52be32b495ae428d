"""A kernel's failure to answer costs once per case, not once per gate: a hang one call
timeout, a file that does not import one worker start. A hang is never excused as the
interpreter's slowness unless the judge has seen Triton in the candidate and the trial is
larger than the benchmark's: CMP-03's interpreter allowance, and the sandbox's known-hang
budgets."""
from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from kdiff.data.cache import private_root
from kdiff.data.model import GateResult, Status
from kdiff.data.problem import load_problem
from kdiff.gates.registry import select
from kdiff.judging.context import GateContext, GateOptions
from kdiff.sandbox import process as sandbox
from kdiff.sandbox.process import CandidateProcess, HangRecord, SandboxLimits

HERE = Path(__file__).parent
DOUBLE = HERE / "fixtures" / "kernelbench_checkout" / "KernelBench" / "level1" / "1_Double.py"
CALL_TIMEOUT = 1.5  # a doubling of 64 elements answers in ms, its first interpreted call 0.3 s


def judge_gates(problem: Path, candidate: Path, gates: list[str], call_timeout: float
                ) -> tuple[dict[str, GateResult], HangRecord]:
    limits = SandboxLimits(call_timeout=call_timeout)
    with CandidateProcess(problem, candidate, limits=limits) as process:
        ctx = GateContext(load_problem(problem), process, GateOptions(device="cpu"))
        return {gate.id: gate.run(ctx) for gate in select(gates)}, process.hangs


def test_a_kernel_that_hangs_off_the_benchmark_shape_fails_cmp03_at_once():
    """No Triton code: its first held-out size that does not answer fails the gate, after one
    call timeout."""
    results, hangs = judge_gates(DOUBLE, HERE / "hostile" / "hangs_off_benchmark.py",
                                 ["CMP-03"], CALL_TIMEOUT)
    gate = results["CMP-03"]
    assert gate.status is Status.FAIL and gate.signature == "hang", gate.detail
    assert "batch_size=1" in gate.detail, gate.detail
    # The timeout, then the same call judged again alone (GateContext.request_judged_alone).
    assert len(hangs.waited) == 2 and hangs.waited[0] == CALL_TIMEOUT


ONE_SIZE_PROBLEM = '''
import torch
import torch.nn as nn

N = 16


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
'''

# Runs {slow} where {condition} holds: SPINS computes for a minute, as an interpreted kernel
# would at a far larger size; SLEEPS stalls as long, computing nothing.
SPINS = "end = time.monotonic() + 60\n            while time.monotonic() < end:\n                pass"
SLEEPS = "time.sleep(60)"
SLOW_WHEN = '''
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        if {condition}:
            {slow}
        out = torch.empty_like(x)
        if {launch}:
            double_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        else:
            out = x * 2.0
        return out
'''


@pytest.mark.parametrize("condition,launch,slow,status", [
    ("x.numel() > 16", "True", SPINS, Status.PASS),
    ("x.numel() != 16", "True", SPINS, Status.FAIL),
    ("x.numel() > 16", "False", SPINS, Status.FAIL),
    ("x.numel() > 16", "True", SLEEPS, Status.FAIL),
], ids=["triton, slow at larger sizes: allowed", "triton, slow at smaller sizes too",
        "declares a triton kernel, launches none", "triton, asleep at larger sizes"])
def test_the_interpreter_allowance_needs_triton_a_larger_size_and_work(
        tmp_path, condition, launch, slow, status):
    """The last: a worker that sleeps through the call past its timeout (its threads want no
    CPU: kdiff.sandbox.runnable) stalled, and was let off as the interpreter's time."""
    problem = tmp_path / "1_OneSize.py"
    problem.write_text(ONE_SIZE_PROBLEM)
    candidate = tmp_path / "slow.py"
    candidate.write_text(SLOW_WHEN.replace("{condition}", condition).replace("{launch}", launch)
                         .replace("{slow}", slow))
    results, hangs = judge_gates(problem, candidate, ["CMP-03"], CALL_TIMEOUT)
    gate = results["CMP-03"]
    assert gate.status is status, gate.detail
    if status is Status.PASS:  # N = 16 (as sent and as a slice), 1, 9 and the size chosen
        # below 16 judged; 17, 33, 127, 1000 and the size chosen above 16 ran past the timeout
        assert gate.detail.startswith("5 trial(s) within bound"), gate.detail
        assert "6 trial(s) not judged" in gate.detail  # and the non-contiguous layout
        assert len(hangs.waited) == 5 + 1  # the first judged again alone, the others not
    else:
        assert gate.signature == "hang", gate.detail
        assert len(hangs.waited) == 1 + 1
    if slow == SLEEPS:
        assert "its threads wanted a CPU for" in gate.detail, gate.detail


def test_a_known_hang_is_not_waited_for_again(monkeypatch):
    """A kernel that hangs on every call: the first gate waits the call timeout and again
    alone, each later one the known-hang budget (the floor here: no call ever answered)."""
    monkeypatch.setattr(sandbox, "KNOWN_HANG_FLOOR_S", 0.5)
    results, hangs = judge_gates(HERE / "hostile" / "problem.py", HERE / "hostile" / "hang.py",
                                 ["CMP-01", "ORD-02", "PRC-01"], 3.0)
    assert all(r.status is Status.FAIL and r.signature == "hang" for r in results.values()), \
        results
    assert hangs.waited[0] == 3.0 and hangs.waited[2:] == [0.5, 0.5], hangs.waited
    assert "known to hang" in results["PRC-01"].detail


def test_known_hang_budgets_follow_the_slowest_answer():
    hangs = HangRecord()
    hangs.answered("call", 0.25)
    hangs.answered("call", 0.05)
    assert hangs.budget("call", 120.0) == 120.0  # no hang seen yet
    hangs.timed_out("call", 120.0)
    assert hangs.budget("call", 120.0) == max(sandbox.KNOWN_HANG_FLOOR_S,
                                              sandbox.KNOWN_HANG_FACTOR * 0.25)
    hangs.answered("call", 60.0)  # a slow kernel, not a hanging one, waits as long as it needs
    assert hangs.budget("call", 120.0) == 120.0


def test_a_timeout_that_answered_alone_is_not_a_known_hang():
    hangs = HangRecord()
    hangs.answered("call", 0.05)
    hangs.timed_out("call", 120.0)
    assert hangs.budget("call", 120.0) == sandbox.KNOWN_HANG_FLOOR_S
    hangs.excuse()  # the machine's load: later calls get the full timeout again
    assert hangs.budget("call", 120.0) == 120.0


def test_a_candidate_that_does_not_import_is_started_once_for_all_gates():
    """Every gate fails `does_not_import` with the import's own error, from one start."""
    gates = ["EXC-01", "ORD-02", "CMP-01", "PRC-01"]
    with CandidateProcess(DOUBLE, HERE / "fixtures" / "core" / "raises_on_import.py") as process:
        ctx = GateContext(load_problem(DOUBLE), process, GateOptions(device="cpu"))
        results = [gate.run(ctx) for gate in select(gates)]
        assert process.starts == 1
    assert [r.status for r in results] == [Status.FAIL] * len(gates)
    assert {r.signature for r in results} == {"does_not_import"}
    assert all("no module named fancy_cuda_ext" in r.detail for r in results)


def test_a_wait_for_another_judges_call_is_not_charged_to_the_case(tmp_path, monkeypatch):
    """A call judged again alone holds the call lock up to its deadline, as often as its
    candidate asks (tests/hostile/holds_the_call_lock.py), and the cases beside it spent their
    wall budgets waiting for it: an honest kernel failed `case_timeout`. Here another judge
    holds the lock for longer than the case has left; the case's call still answers."""
    # A lock of this test's own: the machine's is shared by every judge on it (the other
    # tests' among them), whose calls keep an exclusive hold waiting.
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path))
    problem = load_problem(DOUBLE)
    with CandidateProcess(DOUBLE, HERE / "hostile" / "honest.py") as warm:  # the zygote's start
        GateContext(problem, warm, GateOptions(device="cpu")).call(problem.get_inputs())
    # A hold past whatever of the case's budget is left when the hold starts.
    limits = SandboxLimits(case_timeout=1.5)
    with CandidateProcess(DOUBLE, HERE / "hostile" / "honest.py", limits=limits) as process:
        ctx = GateContext(problem, process, GateOptions(device="cpu"))
        ctx.call(problem.get_inputs())  # the worker started
        holding = threading.Event()

        def other_judge() -> None:
            fd = os.open(private_root() / "calls.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                holding.set()
                time.sleep(process._remaining() + 0.3)  # past what the case has left
            finally:
                os.close(fd)

        thread = threading.Thread(target=other_judge)
        thread.start()
        holding.wait()
        got = ctx.call(problem.get_inputs())
        thread.join()
    assert len(got.outputs) == 1
