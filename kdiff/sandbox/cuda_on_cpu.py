"""Code written for a CUDA device, run on the CPU device.

Kernels judged on the CPU stand for an sm_90 GPU's (kdiff.sandbox.interpreter_device), and
code written for one names its device: tensors made on or moved to `device='cuda'` (by
keyword, `.cuda()`, `.to('cuda')`), `x.is_cuda` asserted, `torch.cuda.synchronize()` after
a launch. A CPU-only torch refuses each ("Torch not compiled with CUDA enabled"), so such
an honest kernel failed the native check and every gate on the CPU alone. Under `CudaOnCpu`
(in every thread) every torch call that names a CUDA device gets the CPU, the device
standing in for it; `is_cuda`, a tensor's `device` and `torch.cuda.is_available()` give the
GPU's answers to the code written for it (so that it launches its kernels, not a fallback
no GPU runs), while torch's and kdiff's own readers keep the answers for the device this
process has (torch chooses its CUDA paths by them); and the `torch.cuda` helpers that only
manage device state do nothing. Autocast for the GPU is autocast on the CPU standing in for
it, and TF32 asked of cuBLAS or cuDNN rounds the operands of aten's matrix products and
convolutions as the GPU does. Streams and events are the CPU's one queue, whose work is
done when issued. The GPU's random generator is the CPU's (its draws are the CPU's: seeding,
saving and restoring one is the other), its free memory is all of the stand-in GPU's, and a
CUDA graph replays the work it captured (kdiff.sandbox.cuda_graph_on_cpu). With CUDA present
none of this applies.
"""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager, nullcontext
from types import GetSetDescriptorType
from typing import Any, Callable, Iterator

import torch
from torch.overrides import TorchFunctionMode

from kdiff.sandbox.cuda_graph_on_cpu import CUDA_GRAPHS
from kdiff.sandbox.interpreter_device import DeviceProperties, asked_by, gpu_answer
from kdiff.sandbox.provenance import THREAD_STARTS

# The device a GPU's tensor answers code written for it, the stand-in GPU's (current_device()
# answers 0 for it).
GPU_DEVICE = torch.device("cuda", 0)

# What a GPU's tensor answers code written for it, by the getter or method asked: wrappers
# assert `x.is_cuda`, and choose torch's fallback by `x.device.type != 'cuda'`, `x.is_cpu` or
# `x.get_device() < 0`, which the CPU's own answers took, so the CPU judged a fallback no GPU
# runs and accepted a defective kernel that was never launched.
_A_GPU_TENSOR_ANSWERS: dict[Any, Any] = {
    torch._C.TensorBase.is_cuda: True,
    torch._C.TensorBase.is_cpu: False,
    torch._C.TensorBase.device: GPU_DEVICE,
    torch.Tensor.get_device: GPU_DEVICE.index,
}

# torch.cuda helpers that only manage device state: nothing to do on the CPU.
DEVICE_STATE_HELPERS: dict[str, Callable[..., None]] = {
    "synchronize": lambda *args, **kwargs: None,
    "empty_cache": lambda *args, **kwargs: None,
    "set_device": lambda *args, **kwargs: None,
    "reset_peak_memory_stats": lambda *args, **kwargs: None,
}


class Event:
    """A CUDA event on the CPU device, where work is done when it is issued: recorded at once,
    complete when asked, and timed by this process's clock (timings of interpreted runs say
    nothing of a GPU's, but a launcher that times its configurations gets its answer)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        self.recorded_at: float | None = None

    def record(self, stream: Any = None) -> None:
        self.recorded_at = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds from this event's record to `end`'s, as CUDA's."""
        if self.recorded_at is None or end.recorded_at is None:
            raise RuntimeError("an Event's elapsed time needs both events recorded")
        return (end.recorded_at - self.recorded_at) * 1e3


# The raw handle of the one stream (CUDA's legacy default stream's, 0), which code written
# for a GPU reads to hand a C library its stream or to key per-device tables; unsloth's
# kernels/utils.py reads `torch._C._cuda_getCurrentRawStream(i)` for each device at import.
RAW_STREAM = 0


class Stream:
    """A CUDA stream on the CPU device: one queue, whose work is done when it is issued, so
    every wait and synchronize has nothing to wait for."""

    cuda_stream = RAW_STREAM

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = GPU_DEVICE

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def wait_stream(self, stream: "Stream") -> None:
        pass

    def wait_event(self, event: Event) -> None:
        pass

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record()
        return event


# torch.cuda's streams and events, which a CPU-only torch refuses to make ("torch.cuda.Stream
# requires CUDA support", "Tried to instantiate dummy base class Event"): launchers written
# for a GPU run on a side stream, wait on the current one, or time a launch by two events.
STREAMS_AND_EVENTS: dict[str, Any] = {
    "Stream": Stream,
    "Event": Event,
    "current_stream": lambda device=None: Stream(),
    "default_stream": lambda device=None: Stream(),
    "stream": lambda stream=None: nullcontext(),
}


class _AnyGenerator(type(torch._C.Generator)):
    """torch.Generator's type, for which every generator is one: the stand-in below replaces
    torch.Generator, and torch's own `isinstance(g, torch.Generator)` of a generator torch
    made (`torch.default_generator`) must stay true."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, torch._C.Generator)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, torch._C.Generator)


class Generator(torch._C.Generator, metaclass=_AnyGenerator):
    """`torch.Generator(device='cuda')`, which a CPU-only torch refuses ("Cannot get CUDA
    generator without ATen_cuda library"): a launcher drawing its dropout mask or seed from
    its own generator gets one of the CPU's, whose tensors stand for the GPU's."""

    def __new__(cls, device: Any = "cpu") -> torch._C.Generator:  # type: ignore[misc]
        return torch._C.Generator("cpu" if is_cuda_device(device) else device)


def _manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(seed)


def _seed() -> None:
    torch.default_generator.seed()


# torch.cuda's random state, which a CPU-only torch refuses to read ("Torch not compiled with
# CUDA enabled") and lets seeding change nothing that draws: a launcher saving the state to
# draw its dropout mask again in the backward, or seeding to replay it, failed or drew another
# mask. The stand-in GPU's tensors are drawn by the CPU's default generator, so its state is
# the GPU's, and it is the GPU's default generator (`torch.cuda.default_generators`, empty).
RANDOM_STATE: dict[str, Callable[..., Any]] = {
    "manual_seed": _manual_seed,
    "manual_seed_all": _manual_seed,
    "seed": _seed,
    "seed_all": _seed,
    "initial_seed": lambda: torch.default_generator.initial_seed(),
    "get_rng_state": lambda device="cuda": torch.get_rng_state(),
    "set_rng_state": lambda new_state, device="cuda": torch.set_rng_state(new_state),
    "get_rng_state_all": lambda: [torch.get_rng_state()],
    "set_rng_state_all": lambda new_states: torch.set_rng_state(new_states[0]),
}


def _free_and_total_memory(device: Any = None) -> tuple[int, int]:
    """`torch.cuda.mem_get_info()`: launchers size their chunks by the free memory. Nothing
    the CPU device holds is the stand-in GPU's (`torch.cuda.memory_allocated()` answers 0), so
    all of it is free."""
    total = DeviceProperties().total_memory
    return total, total


# What the GPU the CPU device stands for answers code written for it. Generated code guards
# its launch with `if not torch.cuda.is_available(): return <torch's op>` (or chooses bf16 by
# `is_bf16_supported()`): a CPU-only torch answered False, so the CPU judged the fallback,
# which no GPU runs, and accepted a defective kernel that was never launched.
GPU_ANSWERS: dict[str, Any] = {
    "is_available": True,
    "device_count": 1,
    "is_bf16_supported": True,
    "get_device_name": DeviceProperties().name,
}


# NVTX's markers (`torch.cuda.nvtx.range(...)` around a launch, in production launchers), which a
# CPU-only torch refuses ("NVTX functions not installed"): annotations for a profiler, which
# do nothing where none is attached, as here.
NVTX_MARKERS: dict[str, Callable[..., Any]] = {
    "range_push": lambda msg: 0,
    "range_pop": lambda: 0,
    "range_start": lambda msg: 0,
    "range_end": lambda range_id: None,
    "mark": lambda msg: None,
}


def is_cuda_device(value: Any) -> bool:
    """Whether `value` names a CUDA device as torch reads a `device` argument: a device, a
    string ('cuda', 'cuda:1') or an index (a GPU's)."""
    if isinstance(value, torch.device):
        return value.type == "cuda"
    if isinstance(value, str):
        return value.split(":")[0] == "cuda"
    return isinstance(value, int) and not isinstance(value, bool)


# The code that keeps the answers for this process's device: torch chooses its CUDA paths by
# them, Triton's NVIDIA driver counts itself active by `is_available()`, and kdiff judges for
# the device it has.
OWN_CODE = ("torch", "triton", "kdiff")


# TF32 (u = 2^-11): an fp32 rounded to 10 mantissa bits, to nearest, ties away from zero, as
# `cvt.rna.tf32.f32` (kdiff.sandbox.interpreter_device's `tl.dot`); cuBLAS and cuDNN take
# such operands and accumulate their products in fp32. Added to the bits, then masked.
_TF32_HALF_ULP, _TF32_MASK = 0x1000, -0x2000  # 0xFFFFE000 as an int32


def _tf32(x: Any) -> Any:
    """An fp32 tensor's values rounded to TF32 (Inf and NaN as they are), as a new tensor;
    anything else as it is."""
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
        return x
    value = x.detach()
    bits = value.contiguous().view(torch.int32)
    rounded = ((bits + _TF32_HALF_ULP) & _TF32_MASK).view(torch.float32)
    return value + torch.where(torch.isfinite(value), rounded - value, 0.0)


def _tf32_asked(read: Callable[[], bool]) -> bool:
    """A TF32 flag as torch reads it. torch refuses to read one whose legacy and new settings
    disagree; kdiff sets the legacy one off before the candidate runs (fp32_means_fp32), so a
    disagreement is the candidate's new setting: TF32."""
    try:
        return read()
    except RuntimeError:
        return True


# aten's operators that cuBLAS (products) or cuDNN (convolutions) computes on a GPU, by the
# operands they multiply (a bias, or an input added to the product, is not rounded). Every
# entry point reaches these (`@`, `torch.linalg.matmul`, `einsum`, `linear`, `torch.ops.aten`,
# a thread of the candidate's, a call with torch functions disabled), which a list of torch's
# functions in a mode did not: `torch.linalg.matmul` with TF32 on passed PRC-01 on the CPU.
_CUBLAS_PRODUCTS = {
    **dict.fromkeys(("mm", "bmm"), ("self", "mat2")),
    **dict.fromkeys(("addmm", "addmm_", "_addmm_activation"), ("mat1", "mat2")),
    **dict.fromkeys(("baddbmm", "baddbmm_", "addbmm", "addbmm_"), ("batch1", "batch2")),
    # F.bilinear's: its products are bmm's inside an operator of its own derivative, whose
    # calls skip ADInplaceOrView; its three operands rounded, as the GPU's first bmm rounds them
    "_trilinear": ("i1", "i2", "i3"),
}
_CUDNN_CONVOLUTIONS = {"convolution": ("input", "weight"), "_convolution": ("input", "weight")}


def _rounding(op: Any, operands: tuple[str, ...], cudnn: bool) -> Callable[..., Any]:
    """A kernel for `op` at ADInplaceOrView, the dispatch key every tensor made outside
    inference mode passes after autograd and before the CPU's kernel: its multiplied
    operands rounded to TF32 where the GPU's flag (or `_convolution`'s own `allow_tf32`) asks
    for it, then the CPU's kernel. Autograd saw the operands as given; the backward's products
    pass here too. The version of a tensor the operator writes moves as the kernel it
    replaces moves it."""
    names = [argument.name for argument in op._schema.arguments]
    positions = [names.index(name) for name in operands]
    flag = names.index("allow_tf32") if "allow_tf32" in names else None
    written = [argument.name for argument in op._schema.arguments
               if argument.alias_info is not None and argument.alias_info.is_write]
    read = torch._C._get_cudnn_allow_tf32 if cudnn else torch._C._get_cublas_allow_tf32

    def kernel(*args: Any, **kwargs: Any) -> Any:
        asked = args[flag] if flag is not None and len(args) > flag else _tf32_asked(read)
        with torch._C._AutoDispatchBelowADInplaceOrView():
            if asked:
                args = tuple(_tf32(x) if i in positions else x for i, x in enumerate(args))
            result = op(*args, **kwargs)
        for name in written:
            torch.autograd.graph.increment_version(
                kwargs[name] if name in kwargs else args[names.index(name)])
        return result

    return kernel


class NoGradForInference:
    """`torch._C._InferenceMode(mode)` on the CPU device: grad mode off (on, for False), whose
    tensors keep ADInplaceOrView. Inference tensors skip that key, so TF32's rounding
    (rounding_as_the_gpu) skipped every product of operands made inside
    `@torch.inference_mode()`, which an H100 rounds all the same; its arithmetic is
    no_grad's. As the guard it stands for, it sets the mode from `__enter__` until its exit or
    its end (dynamo enters one and drops it)."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
        self.prior: bool | None = None

    def __enter__(self) -> None:
        self.prior = torch.is_grad_enabled()
        torch._C._set_grad_enabled(not self.mode)

    def __exit__(self, *exc: Any) -> None:
        self._restore()

    def __del__(self) -> None:
        self._restore()

    def _restore(self) -> None:
        if self.prior is not None:
            torch._C._set_grad_enabled(self.prior)
            self.prior = None


def rounding_as_the_gpu() -> torch.library.Library:
    """TF32's rounding where a GPU's cuBLAS and cuDNN would round, for every overload of
    their operators in this process, until the library returned is destroyed."""
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():  # out= and in-place overloads have one to replace
        warnings.simplefilter("ignore", UserWarning)
        _register(library)
    return library


def _register(library: torch.library.Library) -> None:
    for operators, cudnn in ((_CUBLAS_PRODUCTS, False), (_CUDNN_CONVOLUTIONS, True)):
        for name, operands in operators.items():
            packet = getattr(torch.ops.aten, name)
            for overload in packet.overloads():
                op = getattr(packet, overload)
                if "dtype" in overload:  # out_dtype: fp16 and bf16 operands only
                    continue
                qualified = name if overload == "default" else f"{name}.{overload}"
                library.impl(qualified, _rounding(op, operands, cudnn), "ADInplaceOrView")


class CudaOnCpu(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        getter = getattr(func, "__self__", None)  # of an attribute: `__get__` of its descriptor
        asked = getter if isinstance(getter, GetSetDescriptorType) else func
        if asked in _A_GPU_TENSOR_ANSWERS:
            answer = func(*args, **kwargs)
            on_the_cpu = args[0].device.type == "cpu"  # read here: kdiff's own
            if not on_the_cpu or asked_by(OWN_CODE):  # the reader of the attribute
                return answer
            return _A_GPU_TENSOR_ANSWERS[asked]
        if func is torch.Tensor.cuda or func is torch.Tensor.pin_memory:
            return args[0]  # already on the device standing in for the GPU
        if "device" in kwargs and is_cuda_device(kwargs["device"]):
            kwargs = {**kwargs, "device": "cpu"}
        if func is torch.Tensor.to:  # x.to('cuda'), x.to(torch.device('cuda'), dtype)
            args = tuple("cpu" if is_cuda_device(a) else a for a in args)
        return func(*args, **kwargs)


# what arithmetic_as_the_gpu() registered, kept for the process's life (a library destroyed
# takes its kernels with it)
_KEPT: list[torch.library.Library] = []


def arithmetic_as_the_gpu() -> None:
    """For the rest of this process, once: TF32 rounded and autocast lowered where a GPU's
    would (rounding_as_the_gpu, lowering_as_the_gpu). Neither acts unless TF32 or the CPU's
    autocast is asked for, as on a GPU, where the flags are the process's too."""
    if not _KEPT:
        _KEPT.extend((rounding_as_the_gpu(), lowering_as_the_gpu()))


def stand_ins() -> list[tuple[Any, str, Any]]:
    """(owner, attribute, stand-in): each answer the CPU device gives code written for the GPU."""
    answers = [(torch.cuda, name, gpu_answer(getattr(torch.cuda, name),
                                             lambda *args, answer=answer, **kwargs: answer,
                                             OWN_CODE))
               for name, answer in GPU_ANSWERS.items()]
    return [
        *((torch.cuda, name, helper) for name, helper in DEVICE_STATE_HELPERS.items()),
        *((torch.cuda, name, stand_in) for name, stand_in in STREAMS_AND_EVENTS.items()),
        *((torch.cuda.nvtx, name, marker) for name, marker in NVTX_MARKERS.items()),
        *((torch.cuda, name, stand_in) for name, stand_in in CUDA_GRAPHS.items()),
        *((module, name, answer) for module in (torch.cuda, torch.cuda.random)
          for name, answer in RANDOM_STATE.items()),
        (torch.cuda, "default_generators", (torch.default_generator,)),
        (torch.cuda, "mem_get_info", _free_and_total_memory),
        (torch.cuda.memory, "mem_get_info", _free_and_total_memory),
        (torch, "Generator", Generator),
        # torch's argument parser refuses a stand-in stream before any mode sees the call;
        # with one stream there is nothing to keep a tensor alive for
        (torch.Tensor, "record_stream", lambda self, stream: None),
        *answers,
        (torch.amp.autocast_mode.autocast, "__init__", _autocast_on_the_stand_in()),
        (torch._C, "_InferenceMode", NoGradForInference),
        (torch._C, "_cuda_getCurrentRawStream", lambda device_index=None: RAW_STREAM),
    ]


ABSENT = object()  # an attribute a CPU-only torch does not have


@contextmanager
def gpu_answered_on_the_cpu() -> Iterator[None]:
    """Inside this block, where torch has no CUDA: CUDA-device code runs on the CPU, and what
    was answered before is put back after it (TritonBench's code, run in the judge's process:
    kdiff.adapters.tritonbench.cpu)."""
    if torch.cuda.is_available():
        yield
        return
    arithmetic_as_the_gpu()  # TF32 and the lowering in aten's kernels, which the mode leaves
    replaced = stand_ins()
    # a CPU-only torch lacks some of what is answered (torch._C's CUDA functions): removed after
    shipped = [(owner, name, getattr(owner, name, ABSENT)) for owner, name, _ in replaced]
    for owner, name, stand_in in replaced:
        setattr(owner, name, stand_in)
    try:
        with CudaOnCpu():
            yield
    finally:
        for owner, name, value in reversed(shipped):
            if value is ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


def install() -> None:
    """For the rest of this process, where torch has no CUDA: CUDA-device code runs on the CPU
    (the worker of a candidate judged on the CPU device)."""
    if torch.cuda.is_available() or torch.Generator is Generator:
        return
    for owner, name, stand_in in stand_ins():
        setattr(owner, name, stand_in)
    arithmetic_as_the_gpu()
    CudaOnCpu().__enter__()
    for module, name in THREAD_STARTS:
        if hasattr(module, name):
            setattr(module, name, _starting_under_the_stand_in(getattr(module, name)))


def _starting_under_the_stand_in(start: Callable[..., Any]) -> Callable[..., Any]:
    """`start` (a function that starts a thread running its first argument), whose threads run
    under `CudaOnCpu` too: a mode is the thread's that entered it, and in a thread of the
    candidate's (a pool's) `x.device` read the CPU, so that a launcher guarded by it ran
    torch's fallback, which no GPU runs, and the CPU judged that
    (tests/fixtures/cuda_code/device_guard_in_a_thread_drops_nan.py)."""
    def start_under_the_stand_in(function: Callable[..., Any], *args: Any, **kwargs: Any
                                 ) -> Any:
        def under_the_stand_in(*f_args: Any, **f_kwargs: Any) -> Any:
            with CudaOnCpu():
                return function(*f_args, **f_kwargs)
        return start(under_the_stand_in, *args, **kwargs)
    return start_under_the_stand_in


def _autocast_on_the_stand_in() -> Callable[..., None]:
    """A CPU-only torch disables `torch.autocast('cuda', ...)` (and `torch.cuda.amp.autocast`)
    with a warning, so a kernel computing its products in fp16 under it computed them in fp32
    on the CPU, and passed the precision gates that its run on a GPU fails. Here it is
    autocast on the CPU, at the GPU's dtype (fp16 unless given), with the products CUDA lowers
    and the CPU does not lowered too (lowering_as_the_gpu). The `__init__` of torch's autocast
    doing so."""
    init = torch.amp.autocast_mode.autocast.__init__

    def init_on_the_cpu(self, device_type: str, dtype=None, enabled: bool = True,
                        cache_enabled=None) -> None:
        if device_type == "cuda":
            device_type, dtype = "cpu", dtype or torch.get_autocast_dtype("cuda")
        init(self, device_type, dtype, enabled, cache_enabled)

    return init_on_the_cpu


# aten's operators CUDA's autocast computes at its lower precision and the CPU's leaves alone
# (torch's autocast_mode.cpp, AT_FORALL_LOWER_PRECISION_FP, less the CPU's list): under
# `autocast('cuda')` on the CPU device `torch.mv`, `addmv`, `addr`, `torch.convolution` or an
# LSTM cell ran in fp32 where an H100 runs fp16, and passed PRC-01 there.
_LOWERED_BY_CUDA_ALONE = ("mv", "addmv", "addr", "chain_matmul", "linalg_multi_dot",
                          "convolution", "_convolution", "lstm_cell", "gru_cell",
                          "rnn_tanh_cell", "rnn_relu_cell", "_thnn_fused_lstm_cell",
                          "_thnn_fused_gru_cell")


def _at_autocast_dtype(value: Any, dtype: torch.dtype) -> Any:
    """`value` as CUDA's autocast hands it to a lowered operator: a floating tensor other than
    float64 cast to `dtype`, each of a list's or tuple's, anything else as it is."""
    if isinstance(value, torch.Tensor):
        eligible = value.is_floating_point() and value.dtype != torch.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (list, tuple)):
        return type(value)(_at_autocast_dtype(item, dtype) for item in value)
    return value


def _lowering(op: Any) -> Callable[..., Any]:
    """A kernel for `op` at AutocastCPU: its operands at the autocast's dtype, then `op` below
    autocast, as CUDA's autocast kernel does."""
    below = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        dtype = torch.get_autocast_dtype("cpu")
        with torch._C._ExcludeDispatchKeyGuard(below):
            return op(*_at_autocast_dtype(args, dtype),
                      **{name: _at_autocast_dtype(value, dtype) for name, value in kwargs.items()})

    return kernel


def lowering_as_the_gpu() -> torch.library.Library:
    """The operators CUDA's autocast lowers and the CPU's does not, lowered under the CPU's
    autocast (the GPU's, on the CPU device), until the library returned is destroyed."""
    library = torch.library.Library("aten", "IMPL")
    for name in _LOWERED_BY_CUDA_ALONE:
        library.impl(name, _lowering(getattr(torch.ops.aten, name).default), "AutocastCPU")
    return library
