"""Code written for a CUDA device on the CPU device (kdiff.sandbox.cuda_on_cpu): a kernel that
allocates on `device='cuda'`, moves to it, asserts `is_cuda` and synchronizes keeps its three
states on the CPU, and torch's own readers of `is_cuda` keep the answer for this process."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kdiff.data.model import Case, Status
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.cuda_on_cpu import CudaOnCpu
from kdiff.verdicts.judge import judge_case

pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU-only torch's answers")

CUDA_CODE = Path(__file__).parent / "fixtures" / "cuda_code"


def test_cuda_device_code_keeps_its_three_states_on_the_cpu():
    config = RunConfig(native="kernelbench-v0.1", gates=["EXC-01"])
    honest, defective = (judge_case(Case(name, CUDA_CODE / "problem.py", CUDA_CODE / f"{name}.py"),
                                    config, manager()) for name in ("honest", "drops_nan"))
    assert honest.native.accept is True, honest.native.reason
    assert defective.native.accept is True, defective.native.reason
    assert honest.gates["EXC-01"].status is Status.PASS, honest.gates["EXC-01"].detail
    assert defective.gates["EXC-01"].status is Status.FAIL, defective.gates["EXC-01"].detail
    assert defective.gates["EXC-01"].signature == "nan_swallowed"


def test_is_cuda_answers_the_gpu_s_code_and_not_torch_s_own():
    x = torch.ones(3)
    read = "def read(x):\n    return x.is_cuda\n"
    readers = {}
    for module in ("candidate", "torch.nn.functional", "kdiff.sandbox.worker"):
        scope = {"__name__": module}
        exec(read, scope)
        readers[module] = scope["read"]
    with CudaOnCpu():
        assert readers["candidate"](x) is True
        assert readers["torch.nn.functional"](x) is False
        assert readers["kdiff.sandbox.worker"](x) is False
        moved = x.to("cuda", torch.float64)
        assert moved.device.type == "cpu" and moved.dtype == torch.float64
        assert torch.zeros(2, device=0).device.type == "cpu"
        assert x.cuda() is x
    assert readers["candidate"](x) is False
