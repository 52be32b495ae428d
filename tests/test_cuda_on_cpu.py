"""Code written for a CUDA device on the CPU device (kdiff.sandbox.cuda_on_cpu): a kernel that
allocates on `device='cuda'`, moves to it, asserts `is_cuda`, synchronizes, or computes under
the GPU's autocast or with TF32 turned on keeps its three states on the CPU, and torch's own readers of `is_cuda`
keep the answer for this process."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from kdiff.data.model import Case, Status
from kdiff.judging.context import GateOptions
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.cuda_on_cpu import CudaOnCpu
from kdiff.verdicts.judge import judge_case

# Triton is not imported here: a module importing it before TRITON_INTERPRET is set makes
# its standard library compiled functions, which interpreted kernels of later test files
# cannot call (`tl.cumsum`).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                reason="needs Triton")
on_the_cpu_device = pytest.mark.skipif(torch.cuda.is_available(),
                                       reason="a CPU-only torch's answers")

CUDA_CODE = Path(__file__).parent / "fixtures" / "cuda_code"


# problem, the honest candidate, the defective one, the gate that tells them apart, its signature
PAIRS = [
    # allocations, moves, is_cuda and synchronize; the defect a NaN dropped by tl.maximum
    ("problem", "honest", "drops_nan", "EXC-01", "nan_swallowed"),
    # the GPU's autocast, turned off by the honest one: without it the CPU computed in fp32
    ("matmul", "matmul_fp32", "matmul_autocast", "PRC-01", "below_working_precision"),
    # the same through `torch.mv`, which CUDA's autocast lowers and the CPU's did not
    ("matmul", "matmul_fp32", "matmul_autocast_by_columns", "PRC-01",
     "below_working_precision"),
    # TF32 asked of cuBLAS: without the operands rounded the CPU computed in fp32
    ("matmul", "matmul_fp32", "matmul_tf32", "PRC-01", "below_working_precision"),
    # the same product through `torch.linalg.matmul`, which no list of torch's functions held
    ("matmul", "matmul_fp32", "matmul_tf32_elsewhere", "PRC-01", "below_working_precision"),
    # a launch guarded by `torch.cuda.is_available()`: the CPU judged torch's fallback
    ("problem", "fallback", "fallback_drops_nan", "EXC-01", "nan_swallowed"),
    # a launch guarded by `x.device.type != 'cuda'`: the CPU judged torch's fallback
    ("problem", "device_guard", "device_guard_drops_nan", "EXC-01", "nan_swallowed"),
    # the same from a pool's thread, where the CPU's answers were the main thread's alone
    ("problem", "device_guard_in_a_thread", "device_guard_in_a_thread_drops_nan", "EXC-01",
     "nan_swallowed"),
    # the same behind `x.is_cpu or x.get_device() < 0`
    ("problem", "cpu_guard", "cpu_guard_drops_nan", "EXC-01", "nan_swallowed"),
    # DEVICE from Triton's driver, a side stream, events, NVTX: the honest one was refused
    ("problem", "streams", "streams_drops_nan", "EXC-01", "nan_swallowed"),
    # a CUDA generator, the GPU's random state saved and seeded, its free memory: refused
    ("problem", "rng", "rng_drops_nan", "EXC-01", "nan_swallowed"),
    # captured in a CUDA graph and replayed: refused
    ("problem", "graphed", "graphed_drops_nan", "EXC-01", "nan_swallowed"),
    # bf16 where `is_bf16_supported()`: the CPU computed the fp32 path no H200 takes
    ("problem", "honest", "bf16_supported", "PRC-01", "below_working_precision"),
    # a `torch.compile`d launcher: inductor took the stand-in GPU for AMD's, dynamo traced
    # into the interpreter; compiling takes seconds
    pytest.param("problem", "compiled", "compiled_drops_nan", "EXC-01", "nan_swallowed",
                 marks=pytest.mark.slow),
]


def _three_states(problem: str, honest: str, defective: str, gate: str, signature: str,
                  device: str) -> None:
    config = RunConfig(native="kernelbench-v0.1", gates=[gate],
                       gate_options=GateOptions(device=device))
    good, bad = (judge_case(Case(name, CUDA_CODE / f"{problem}.py", CUDA_CODE / f"{name}.py"),
                            config, manager()) for name in (honest, defective))
    assert good.native.accept is True, good.native.reason
    assert bad.native.accept is True, bad.native.reason
    assert good.gates[gate].status is Status.PASS, good.gates[gate].detail
    assert bad.gates[gate].status is Status.FAIL, bad.gates[gate].detail
    assert bad.gates[gate].signature == signature


PAIR_IDS = [getattr(p, "values", p)[2] for p in PAIRS]


@on_the_cpu_device
@pytest.mark.parametrize("problem,honest,defective,gate,signature", PAIRS, ids=PAIR_IDS)
def test_cuda_device_code_keeps_its_three_states_on_the_cpu(problem, honest, defective, gate,
                                                            signature):
    _three_states(problem, honest, defective, gate, signature, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("problem,honest,defective,gate,signature", PAIRS, ids=PAIR_IDS)
def test_the_same_pairs_keep_those_states_on_a_gpu(problem, honest, defective, gate,
                                                   signature):
    """The verdicts the CPU device stands in for: each pair judged with CUDA workers."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    _three_states(problem, honest, defective, gate, signature, "cuda")


@on_the_cpu_device
def test_is_cuda_answers_the_gpu_s_code_and_not_torch_s_own():
    x = torch.ones(3)
    read = "def read(x):\n    return x.is_cuda\ndef where(x):\n    return x.device\n"
    readers, where = {}, {}
    for module in ("candidate", "torch.nn.functional", "kdiff.sandbox.worker"):
        scope = {"__name__": module}
        exec(read, scope)
        readers[module], where[module] = scope["read"], scope["where"]
    with CudaOnCpu():
        assert readers["candidate"](x) is True
        assert readers["torch.nn.functional"](x) is False
        assert readers["kdiff.sandbox.worker"](x) is False
        assert where["candidate"](x) == torch.device("cuda", 0)
        assert not x.is_cpu and x.get_device() == 0  # read by this module: the GPU's code
        cpu = torch.device("cpu")
        assert where["torch.nn.functional"](x) == where["kdiff.sandbox.worker"](x) == cpu
        assert where["torch.nn.functional"](torch.empty(1, device=where["candidate"](x))) == cpu
        moved = x.to("cuda", torch.float64)
        assert where["torch.nn.functional"](moved) == cpu and moved.dtype == torch.float64
        assert where["torch.nn.functional"](torch.zeros(2, device=0)) == cpu
        assert x.cuda() is x
    assert readers["candidate"](x) is False
    assert x.is_cpu and x.get_device() == -1


@on_the_cpu_device
def test_tf32_rounds_to_nearest_ties_away():
    from kdiff.sandbox.cuda_on_cpu import _tf32
    one = 1.0
    values = torch.tensor([one + 2**-11, one + 2**-12, -(one + 3 * 2**-12), float("inf"),
                           float("nan"), 2.0**-130])
    rounded = _tf32(values)
    assert rounded[:4].tolist() == [one + 2**-10, one, -(one + 2**-10), float("inf")]
    assert rounded[4].isnan() and rounded[5].item() == 2.0**-130  # a subnormal's 10 bits kept


@on_the_cpu_device
def test_tf32_rounds_the_operands_of_every_way_to_a_product_or_convolution(monkeypatch):
    """Whatever calls cuBLAS's or cuDNN's operator on a GPU (an alias, torch.ops, out= and
    in-place overloads, a thread, torch functions disabled, operands made in inference mode)
    gets TF32's operands, and the gradient still flows; with the flags off nothing is
    rounded."""
    import threading

    from kdiff.sandbox.cuda_on_cpu import NoGradForInference, _tf32, rounding_as_the_gpu
    generator = torch.Generator().manual_seed(0)
    a, b = torch.randn(8, 16, generator=generator), torch.randn(16, 8, generator=generator)
    x = torch.randn(1, 2, 6, 6, generator=generator)
    w = torch.randn(3, 2, 3, 3, generator=generator)
    product, fp32_product = _tf32(a) @ _tf32(b), a @ b
    convolution = torch.nn.functional.conv2d(_tf32(x), _tf32(w))
    weight = torch.randn(3, 16, 16, generator=generator)
    bilinear = torch.nn.functional.bilinear(_tf32(a), _tf32(b.t()), _tf32(weight))
    assert not torch.equal(product, fp32_product)
    in_a_thread, out = {}, torch.empty(8, 8)
    monkeypatch.setattr(torch._C, "_InferenceMode", NoGradForInference)
    library = rounding_as_the_gpu()
    try:
        assert torch.equal(a @ b, fp32_product)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        with torch._C.DisableTorchFunction():
            disabled = a @ b
        with torch.inference_mode():
            inferred = a.clone() @ b.clone()
        thread = threading.Thread(target=lambda: in_a_thread.setdefault("y", a @ b))
        thread.start()
        thread.join()
        version = out._version
        torch.mm(a, b, out=out)
        for answer in (torch.linalg.matmul(a, b), torch.ops.aten.mm.default(a, b), disabled,
                       in_a_thread["y"], out, torch.zeros(8, 8).addmm_(a, b), inferred):
            assert torch.equal(answer, product)
        assert out._version == version + 1
        assert torch.equal(torch.nn.functional.conv2d(x, w), convolution)
        assert torch.equal(torch.nn.functional.bilinear(a, b.t(), weight), bilinear)
        leaf = a.clone().requires_grad_()
        (leaf @ b).sum().backward()
        assert leaf.grad is not None
    finally:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        library._destroy()
    assert torch.equal(a @ b, fp32_product)


@on_the_cpu_device
def test_the_gpus_autocast_lowers_what_cudas_lowers_and_the_cpus_does_not():
    from kdiff.sandbox.cuda_on_cpu import lowering_as_the_gpu
    generator = torch.Generator().manual_seed(0)
    a, v = torch.randn(8, 16, generator=generator), torch.randn(16, generator=generator)
    in_fp16 = torch.mv(a.half(), v.half())
    library = lowering_as_the_gpu()
    try:
        with torch.autocast("cpu", dtype=torch.float16):
            lowered = torch.mv(a, v)
            in_fp64 = torch.mv(a.double(), v.double())
        assert lowered.dtype == torch.float16 and torch.equal(lowered, in_fp16)
        assert in_fp64.dtype == torch.float64
        assert torch.mv(a, v).dtype == torch.float32  # outside autocast as it was
    finally:
        library._destroy()
