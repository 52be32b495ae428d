"""The worker's interpreter without the work whose result it drops (kdiff.sandbox.interpreter_device):
kernels give the same bits either way, and a worker and a TritonBench script run with it
installed."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before this module decorates its kernels

import torch

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
from triton.runtime import interpreter  # noqa: E402

from kdiff.sandbox import interpreter_device  # noqa: E402
from kdiff.sandbox.process import CandidateProcess  # noqa: E402

PROBLEM = Path(__file__).parent / "fixtures" / "kernelbench_checkout" / "KernelBench" / \
    "level1" / "1_Double.py"


@triton.jit
def _mixed_kernel(x_ptr, k_ptr, out_ptr, hashed_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    k = tl.load(k_ptr + offs, mask=mask, other=0)
    # int32 arithmetic that wraps: what the sanitiser recomputes in int64 and drops
    hashed = k * 1103515245 + 12345
    hashed = hashed - (k << 7) * 40503
    y = tl.math.exp(tl.minimum(x, 0.0)) + tl.sqrt(tl.abs(x)) + x.to(tl.float16).to(tl.float32)
    y = tl.where(x > 0, y, tl.math.log(1.0 + tl.abs(x)))
    y = y + tl.sum(x, axis=0) / BLOCK + tl.max(k, axis=0).to(tl.float32)
    tl.store(out_ptr + offs, y, mask=mask)
    tl.store(hashed_ptr + offs, hashed, mask=mask)


def _run_mixed() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    n = 300
    x = torch.randn(n, generator=gen) * 3
    k = torch.randint(-2**31, 2**31 - 1, (n,), generator=gen, dtype=torch.int32)
    out = torch.empty(n)
    hashed = torch.empty(n, dtype=torch.int32)
    _mixed_kernel[(triton.cdiv(n, 128),)](x, k, out, hashed, n, BLOCK=128)
    return out, hashed


@pytest.fixture
def shipped_interpreter():
    """The interpreter as Triton ships it, restored after the test."""
    builder = interpreter.interpreter_builder
    options = builder.options
    yield
    builder.options = options


def test_kernels_give_the_same_bits_with_the_dropped_work_off(shipped_interpreter):
    assert interpreter.interpreter_builder.options.sanitize_overflow
    before = _run_mixed()
    interpreter_device.install()
    assert not interpreter.interpreter_builder.options.sanitize_overflow
    after = _run_mixed()
    for a, b in zip(before, after):
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))
    hashed = before[1]
    assert int(hashed.min()) < 0  # the products wrapped: the sanitiser had something to check


def test_with_debug_on_the_overflow_checks_stay(shipped_interpreter):
    builder = interpreter.interpreter_builder
    builder.options = dataclasses.replace(builder.options, debug=True)
    interpreter_device.install()
    assert builder.options.sanitize_overflow


WHAT_THE_WORKER_RUNS = '''
import torch
import torch.nn as nn
from triton.runtime import interpreter


class ModelNew(nn.Module):
    def forward(self, x):
        options = interpreter.interpreter_builder.options
        return torch.full_like(x, float(options.sanitize_overflow))
'''


def test_a_worker_runs_without_the_dropped_work(tmp_path):
    candidate = tmp_path / "reports_the_setting.py"
    candidate.write_text(WHAT_THE_WORKER_RUNS)
    with CandidateProcess(PROBLEM, candidate) as worker:
        worker.request("build", key="c", role="candidate", seed=0, dtype="float32",
                       init_inputs=[])
        reply = worker.request("call", key="c", inputs=[torch.randn(4, 16)])
    assert torch.equal(reply["outputs"][0], torch.zeros(4, 16)), reply["outputs"][0]


def test_a_tritonbench_script_runs_without_the_dropped_work(tmp_path):
    from kdiff.adapters.tritonbench.runner import run_script
    from kdiff.sandbox.process import SandboxLimits
    script = tmp_path / "prints_the_setting.py"
    script.write_text("from triton.runtime import interpreter\n"
                      "print(interpreter.interpreter_builder.options.sanitize_overflow)\n")
    result = run_script(script, "cpu", SandboxLimits())
    assert result.returncode == 0, result.failure()
    assert result.stdout.strip() == "False", result.stdout
