"""The Triton interpreter as the worker's CPU device: computing what a compiled kernel on a
GPU computes where a verdict depends on it, without the work whose result it drops.

A candidate's Triton kernel runs on the CPU through Triton's interpreter, and most of a CPU
judging's time is spent there (the default job: 33 of 55 CPU seconds). A third of that time
went to the overflow sanitiser: with `sanitize_overflow` set (the interpreter's default), every
integer add, sub and mul is computed again in int64 and compared against the type's range, to
feed a `device_assert` that does nothing unless `debug` is set, which the interpreter never
sets (it has no switch for it). The worker (and TritonBench's script runner) switches the
sanitiser off where `debug` is off, which changes nothing a kernel can observe.

A float argument that is not `constexpr` is an fp32 scalar in a compiled kernel (Triton's
`mangle_type`), with a scalar's methods (`eps.to(tl.float32)`) and fp32's place in type
promotion (`x_fp16 * scale` computes in fp32). The interpreter passes it on as a Python float,
which has neither: production kernels that call `.to` on one (Liger-Kernel's norms and
activations) raise, and arithmetic with one stays in the other operand's type. The worker
passes it as Triton's compiler types it.

The interpreter has no `extern_elementwise`, so libdevice's functions return None or raise
there; the worker gives it kdiff.sandbox.interpreter_libdevice's, inline PTX
kdiff.sandbox.interpreter_ptx's, bf16 kdiff.sandbox.interpreter_bf16's arithmetic, fp8
kdiff.sandbox.interpreter_fp8's widening (NaN and Inf kept), and the
order of a launch's programs kdiff.sandbox.interpreter_order's. Each function below says what
else differs and why: `tl.dot`'s TF32, autotuning, `tl` patched once a launch instead of
once a device-function call, and a builtin a module binds to a name of its own patched too.

Where the interpreter does not have the shape this reads (another Triton version), nothing is
changed. tests/test_interpreter_device.py runs kernels each way and compares them bit for bit
or against the compiled kernel's types.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import operator
import os
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from kdiff.sandbox import (
    interpreter_bf16,
    interpreter_calls,
    interpreter_fp8,
    interpreter_libdevice,
    interpreter_order,
    interpreter_ptx,
    interpreter_type_checks,
    interpreter_types,
)
from kdiff.sandbox.interpreter_order import Launch


def install() -> None:
    """In this process's interpreter: types built once per value, a binary operation's type
    check once per pair of types, builtins reached in one call, float arguments typed and
    fp32 products rounded as compiled Triton does, the sanitiser off, `tl` patched once a
    launch, programs in a drawn order, and (when kernels are interpreted) libdevice, inline
    PTX, an autotuner that takes its configurations in order and a compute capability; a
    no-op without Triton."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    # Where kernels are compiled (a CUDA worker) Triton's frontend runs once a kernel, and
    # what it builds is the GPU's code: the per-operation shortcuts stay out of it.
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    interpreter_types.install(interpreter, interpreted)
    if interpreted:
        interpreter_type_checks.install(interpreter_types.keys()[0])
        interpreter_calls.install(interpreter)
    _type_float_arguments(interpreter)
    _index_by_a_scalar_s_one_element(interpreter)
    _dtypes_answer_value(interpreter)
    _constexpr_operators_yield_tensors()
    _loop_variables_as_tensors(interpreter)
    _boolean_operators_as_compiled(interpreter)
    _drop_the_overflow_sanitiser(interpreter)
    _dot_at_its_input_precision(interpreter)
    _max_and_min_drop_nan_as_compiled(interpreter)  # before bf16's, which wraps clamp and fma
    _fma_rounded_once(interpreter)
    interpreter_bf16.install(interpreter)
    _atomic_adds_of_16_bit_floats(interpreter)
    _comparisons_typed_int1(interpreter)
    _grid_as_compiled(interpreter)
    _cpu_arguments_in_place(interpreter)
    interpreter_fp8.install(interpreter)
    launches = interpreter_order.install(interpreter)
    if launches is not None:
        _patch_the_language_once_a_launch(interpreter, launches)
    _list_the_builtins_once(interpreter)
    if interpreted:  # compiled kernels need Triton's own
        _give_it_libdevice(interpreter)
        _give_it_inline_ptx(interpreter)
        _autotune_in_order()
        _report_a_compute_capability()
        _report_the_device_s_properties()
        _answer_for_triton_s_driver()
        _report_triton_s_support()
        _report_the_current_accelerator()
        _guard_a_cpu_tensor_s_device()


# The first Triton whose interpreter has the shape kdiff's worker reads: a launch through
# `InterpretedFunction.run`, a method of the class (the worker records each launch there, for
# RES-02's compiles and the provenance of the candidate's own kernels), and `tl` patched in a
# scope the launch's end restores (`_LangPatchScope`). Before 3.6 a launch went through
# `__getitem__`, `run` was each instance's own, and every judging on the CPU raised.
OLDEST_TRITON = "3.6"


def refusal() -> str | None:
    """One line saying that this process's Triton cannot be the CPU device, or None where it
    can (or where there is no Triton, and no Triton kernel to judge)."""
    try:
        import triton
        from triton.runtime import interpreter
    except ImportError:
        return None
    launched_by_run = "run" in vars(getattr(interpreter, "InterpretedFunction", object))
    if launched_by_run and hasattr(interpreter, "_LangPatchScope"):
        return None
    return f"Triton {triton.__version__} found; kdiff's CPU judging needs >= {OLDEST_TRITON}"


# The compute capability the CPU device answers: sm_90, the H200's and one of the two
# architectures RES-02 compiles a candidate's kernels for, so that a library choosing its path
# by it takes a path those compiles judge.
CPU_DEVICE_CAPABILITY = (9, 0)


def answer_for_the_gpu(owner: Any, name: str, answer: Callable,
                       own: tuple[str, ...] = ("torch",)) -> None:
    """`owner.name` answers as the GPU the interpreted kernels stand for (`answer`), once, and
    only where this process has no GPU of its own to answer (marked `of_the_cpu`). Callers
    from the `own` packages keep the shipped answer: torch's (inductor, dynamo, autocast)
    choose what to do for the device this process really has (inductor's cache key reads
    `get_device_properties` and, with no CUDA version, took the stand-in for an AMD GPU's:
    every `torch.compile`d launcher raised)."""
    import torch
    shipped = getattr(owner, name, None)
    if torch.cuda.is_available() or getattr(shipped, "of_the_cpu", False):
        return
    setattr(owner, name, gpu_answer(shipped, answer, own))


def gpu_answer(shipped: Callable, answer: Callable, own: tuple[str, ...]) -> Callable:
    """`answer` for code written for the GPU, `shipped` for callers from the `own` packages
    (answer_for_the_gpu)."""

    def asked(*args, **kwargs):
        return shipped(*args, **kwargs) if asked_by(own) else answer(*args, **kwargs)

    asked.of_the_cpu = True
    return asked


def _report_a_compute_capability() -> None:
    """Production libraries ask the device's compute capability when imported or when choosing
    a path (attorch turns TF32 on from sm_80); without CUDA torch raises there, so their
    kernels could not be judged on the CPU at all. Interpreted kernels stand for a GPU's, so
    `torch.cuda.get_device_capability` answers that GPU's. Nothing else about CUDA changes
    here (`torch.cuda.is_available()`: kdiff.sandbox.cuda_on_cpu)."""
    import torch

    def get_device_capability(device=None) -> tuple[int, int]:
        return CPU_DEVICE_CAPABILITY

    answer_for_the_gpu(torch.cuda, "get_device_capability", get_device_capability)


@dataclasses.dataclass(frozen=True)
class DeviceProperties:
    """What `torch.cuda.get_device_properties` gives, for the GPU the CPU device stands for:
    an H200's (sm_90, CPU_DEVICE_CAPABILITY; the limits are the CUDA occupancy tables' for
    compute capability 9.0, the memory the H200's 141 GB as torch reports it)."""

    name: str = "NVIDIA H200"
    major: int = CPU_DEVICE_CAPABILITY[0]
    minor: int = CPU_DEVICE_CAPABILITY[1]
    total_memory: int = 143771 * 2**20
    multi_processor_count: int = 132
    warp_size: int = 32
    max_threads_per_multi_processor: int = 2048
    max_threads_per_block: int = 1024
    regs_per_multiprocessor: int = 65536
    shared_memory_per_block: int = 48 * 2**10
    shared_memory_per_block_optin: int = 227 * 2**10
    shared_memory_per_multiprocessor: int = 228 * 2**10
    L2_cache_size: int = 50 * 2**20
    is_integrated: bool = False
    is_multi_gpu_board: bool = False


def _report_the_device_s_properties() -> None:
    """Libraries size their launches by the device's properties, some when imported
    (flash-attention's layer norm lists its autotune configs by
    `get_device_properties(current_device()).warp_size`, its backward grid by
    `multi_processor_count`); without CUDA torch raises at both, so those kernels could not be
    judged on the CPU. As with the compute capability, the interpreted kernels stand for an
    sm_90 GPU's: `torch.cuda.current_device()` answers 0 and `get_device_properties` that
    GPU's (DeviceProperties); `torch.cuda.is_available()`: kdiff.sandbox.cuda_on_cpu."""
    import torch

    def current_device() -> int:
        return 0

    def get_device_properties(device=None) -> DeviceProperties:
        return DeviceProperties()

    answer_for_the_gpu(torch.cuda, "current_device", current_device)
    answer_for_the_gpu(torch.cuda, "get_device_properties", get_device_properties)


class StandInDriver:
    """Triton's driver as the GPU the CPU device stands for answers its queries: the current
    device (0), the target (CUDA at CPU_DEVICE_CAPABILITY, warps of 32) and the device's
    properties as CudaUtils.get_device_properties gives them, read from DeviceProperties. The
    clock rates and memory bus a GPU's driver also gives are not known here and are not
    answered (a library reading them raises, as without this driver)."""

    class utils:
        @staticmethod
        def get_device_properties(device) -> dict[str, int]:
            gpu = DeviceProperties()
            return {"max_shared_mem": gpu.shared_memory_per_block_optin,
                    "max_num_regs": gpu.regs_per_multiprocessor,
                    "multiprocessor_count": gpu.multi_processor_count,
                    "warpSize": gpu.warp_size}

    @staticmethod
    def get_current_device() -> int:
        return 0

    @staticmethod
    def get_active_torch_device():
        """The GPU's torch device, cuda:0 (Triton's tutorials, and the code generated after
        them, take `DEVICE` from here to allocate on and assert `x.device == DEVICE` of their
        inputs; on the CPU device, allocations on it are the CPU's and a CPU tensor's device
        answers cuda:0 to such code: kdiff.sandbox.cuda_on_cpu)."""
        import torch
        return torch.device("cuda", 0)

    @staticmethod
    def get_current_target():
        from triton.backends.compiler import GPUTarget
        major, minor = CPU_DEVICE_CAPABILITY
        return GPUTarget("cuda", major * 10 + minor, DeviceProperties().warp_size)


def _answer_for_triton_s_driver() -> None:
    """Autotuners prune their configs by the device (`early_config_prune` of the
    `triton.ops.matmul` lineage reads `driver.active.utils.get_device_properties(dev)
    ["max_shared_mem"]`: triton-lang/kernels' matmul, xformers' tiled matmul) and libraries
    ask `driver.active.get_current_target()` whether they run on AMD; with no GPU Triton has
    no active driver and raised ("0 active drivers"), so such kernels failed the native check
    on the CPU. Without CUDA the interpreted kernels' GPU answers (StandInDriver); a process
    with a GPU keeps its own (not created here: a CUDA driver would initialise the device)."""
    import torch
    try:
        from triton.runtime import driver
    except ImportError:
        return
    if torch.cuda.is_available() or isinstance(getattr(driver, "_active", None), StandInDriver):
        return
    driver.set_active(StandInDriver())


def asked_by(own: tuple[str, ...]) -> bool:
    """Whether the function that called the caller of this is the code of one of the `own`
    packages."""
    caller = sys._getframe(2).f_globals.get("__name__", "")
    return caller.split(".")[0] in own


def _report_the_current_accelerator() -> None:
    """Libraries choose their device module by `torch.accelerator.current_accelerator()`
    (bitsandbytes' Triton backend reads its `.type` at import, then enters
    `getattr(torch, type).device(x.device)` around each launch); a CPU-only torch answers
    None, and the import raised ("'NoneType' object has no attribute 'type'"). The
    interpreted kernels stand for an sm_90 GPU's, whose current accelerator is cuda: callers
    outside torch are answered `device("cuda")`; torch's own keep its answer."""
    import torch
    accelerator = getattr(torch, "accelerator", None)
    if getattr(accelerator, "current_accelerator", None) is None:
        return

    def current_accelerator(check_available: bool = False):
        return torch.device("cuda")

    answer_for_the_gpu(accelerator, "current_accelerator", current_accelerator)


def _report_triton_s_support() -> None:
    """Libraries define their Triton kernels only where torch says Triton runs
    (`if torch.utils._triton.has_triton():` around a module's kernels and launchers: torchao's
    MoE-training fp8 scales, its MX formats, its blockwise fp8 inference). torch answers by
    the devices it can see, and without CUDA (and with no Triton backend for the CPU) it
    answered False: those modules defined nothing and their ops failed the native check on
    the CPU. The interpreted kernels stand for an sm_90 GPU's, where has_triton() is True, so
    a caller outside torch is answered True. torch's own callers (inductor, dynamo) keep the
    shipped answer: they choose what to generate for the device this process really has."""
    try:
        import torch.utils._triton as torch_triton
    except ImportError:
        return

    def has_triton() -> bool:
        return True

    answer_for_the_gpu(torch_triton, "has_triton", has_triton)


def _guard_a_cpu_tensor_s_device() -> None:
    """Launchers written for a GPU enter `torch.cuda.device(x.device.index)` around a launch
    (every mamba_ssm Triton op). A CPU tensor's index is None, which a CUDA torch reads as the
    current device; a CPU-only torch reads no current device and its guard raises comparing
    None with 0, so every such kernel failed the native check on the CPU. Others enter
    `torch.cuda.device(x.device)` (xformers' RMSNorm), the tensor's device itself, which a
    CPU tensor makes 'cpu' and torch refuses ("Expected a cuda device, but got: cpu").
    FlagAttention enters `torch.cuda.device(torch.cuda.device_of(q))`, a guard given another
    guard: torch reads no index from it and takes the current device, which a CPU-only torch
    reads as None and raised comparing with 0. There the guard of no index, of the CPU, or of
    a guard of no device (`device_of` a CPU tensor holds -1) is the guard of no device (-1,
    which torch's own CPU build already enters and leaves doing nothing), and so is the guard
    of the one GPU the CPU device stands for (index 0: the candidate's code reads a CPU
    tensor's device as cuda:0, kdiff.sandbox.cuda_on_cpu); any other index still raises as
    before. Such a guard's `idx` is still the index a GPU's torch answers (0, or -1 for the
    guard of no device): unsloth keys its table of streams by `torch.cuda.device(i).idx` at
    import, and an idx of -1 for device 0 raised there."""
    import torch
    if torch.cuda.is_available() or getattr(torch.cuda.device, "of_the_cpu", False):
        return
    guard = torch.cuda.device

    class device(guard):
        of_the_cpu = True

        def __init__(self, device) -> None:
            self.stand_in = _the_stand_in_gpu(device, guard)
            super().__init__(-1 if self.stand_in else device)
            if self.stand_in:
                self.idx = device.idx if isinstance(device, guard) else 0

        def __enter__(self) -> None:
            if not self.stand_in:
                return super().__enter__()
            self.prev_idx = -1  # the guard of no device, entered and left doing nothing

        def __exit__(self, *exc) -> bool:
            return False if self.stand_in else super().__exit__(*exc)

    torch.cuda.device = device


def _the_stand_in_gpu(device, guard: type) -> bool:
    """Whether a device guard's argument names no device, the CPU, or the one GPU the CPU
    device stands for (index 0, as `current_device()` answers and a CPU tensor's `device`
    answers the candidate's code)."""
    import torch
    if isinstance(device, guard):
        return device.idx in (-1, 0)
    if isinstance(device, (str, torch.device)):
        device = torch.device(device)
        return device.type == "cpu" or device.index in (None, 0)
    return device is None or (device == 0 and not isinstance(device, bool))


def launch_outside_torch_compile() -> None:
    """A launcher compiled with `torch.compile` (GPU MODE submissions, production wrappers)
    hands a GPU's Triton kernel to inductor, which calls it as it is. An interpreted kernel is
    Python that dynamo traced into, and failed on (the interpreter's numpy blocks are no
    tensors): every such launcher raised on the CPU. Here dynamo leaves the launch out of its
    graph and runs it as it is, as inductor runs the GPU's kernel. Only once dynamo is loaded
    (the worker asks before each call): marking a function imports it, 1.1 CPU s, which a
    worker whose candidate compiles nothing need not pay."""
    if os.environ.get("TRITON_INTERPRET") != "1" or "torch._dynamo" not in sys.modules:
        return
    import torch
    from triton.runtime import interpreter
    run = interpreter.InterpretedFunction.run
    if getattr(run, "of_the_cpu", False):
        return
    run = torch.compiler.disable(run, recursive=True)
    run.of_the_cpu = True
    interpreter.InterpretedFunction.run = run


def _grid_as_compiled(interpreter) -> None:
    """Compiled Triton reads a launch's grid, or what a grid function returns, as any sequence
    (JITFunction.run takes its length and indexes it); triton-lang/kernels' block-sparse
    softmax launches on a list. The interpreter appends a tuple of ones to the grid, which
    raised on a list ("can only concatenate list (not "tuple") to list"): the native check
    and every gate failed. The worker hands the interpreter the grid as a tuple."""
    executor = getattr(interpreter, "GridExecutor", None)
    init = getattr(executor, "__init__", None)
    if init is None or getattr(init, "grid_as_tuple", False):
        return
    if list(inspect.signature(init).parameters)[:4] != ["self", "fn", "arg_names", "grid"]:
        return

    def as_tuple(grid):
        if callable(grid):
            return lambda meta: tuple(grid(meta))
        return tuple(grid)

    def __init__(self, fn, arg_names, grid, *args, **kwargs):
        init(self, fn, arg_names, as_tuple(grid), *args, **kwargs)

    __init__.grid_as_tuple = True
    executor.__init__ = __init__


def _cpu_arguments_in_place(interpreter) -> None:
    """The interpreter copies a launch's tensor arguments to the host and back: a view of each
    storage's `.cpu()` before the programs run, and each storage copied onto its device
    original after. On the CPU `.cpu()` is the storage itself, so both are views of the same
    memory and the copy back is a copy onto itself, yet each of their torch operations passes
    through the worker's modes (the CUDA stand-in, the provenance trace): 4% of the default
    job's CPU time. A launch whose tensor arguments are all plain CPU tensors runs on them as
    they are; any other (a tuple, a descriptor, a wrapper, a CUDA tensor) is copied as before."""
    executor = getattr(interpreter, "GridExecutor", None)
    to_host = getattr(executor, "_init_args_hst", None)
    back = getattr(executor, "_restore_args_dev", None)
    if to_host is None or back is None or getattr(to_host, "in_place", False):
        return
    import torch
    descriptor = getattr(interpreter, "TensorDescriptor", None)
    copied = (tuple, descriptor) if descriptor else (tuple,)

    def on_the_host(arg) -> bool:
        if not hasattr(arg, "data_ptr"):
            return not isinstance(arg, copied)
        return type(arg) is torch.Tensor and arg.device.type == "cpu"

    def _init_args_hst(self, args_dev, kwargs):
        with torch._C.DisableTorchFunction():  # kdiff's reading, not the candidate's
            in_place = all(map(on_the_host, args_dev)) and all(map(on_the_host, kwargs.values()))
        if in_place:
            return list(args_dev), dict(kwargs)
        return to_host(self, args_dev, kwargs)

    def _restore_args_dev(self, args_dev, args_hst, kwargs, kwargs_hst):
        if all(map(operator.is_, args_dev, args_hst)) and all(
                kwargs[name] is kwargs_hst[name] for name in kwargs):
            return
        back(self, args_dev, args_hst, kwargs, kwargs_hst)

    _init_args_hst.in_place = True
    executor._init_args_hst = _init_args_hst
    executor._restore_args_dev = _restore_args_dev


def _give_it_inline_ptx(interpreter) -> None:
    """`tl.inline_asm_elementwise` of the single instructions kdiff.sandbox.interpreter_ptx
    defines; any other raises there, naming it."""
    builder = getattr(interpreter, "interpreter_builder", None)
    handle_type = getattr(interpreter, "TensorHandle", None)
    if builder is None or handle_type is None or getattr(builder, "has_inline_ptx", False):
        return

    class Call:  # what the compiler's inline-asm op gives: its results by index
        def __init__(self, results):
            self.results = results

        def get_result(self, i):
            return self.results[i]

    def create_inline_asm(asm, constraints, values, ret_types, is_pure, pack):
        if len(ret_types) != 1:
            raise interpreter_ptx.refuse(asm, "several results")
        out = getattr(ret_types[0], "scalar", ret_types[0])
        result = interpreter_ptx.instruction(asm, constraints, pack)([v.data for v in values])
        out_np = interpreter._get_np_dtype(out)
        if out_np.itemsize != 4:
            raise interpreter_ptx.refuse(asm, f"a {out} result")
        return Call([handle_type(result.view(out_np), out)])

    builder.create_inline_asm = create_inline_asm
    builder.has_inline_ptx = True


def _autotune_in_order() -> None:
    """An autotuner times each configuration with the device's benchmarker, which the
    interpreter has not (no active driver): every autotuned kernel raised. Timed on the CPU,
    the interpreter's times would say nothing of a GPU's, and a choice that varied with load
    would make verdicts vary. The configurations are taken as equally fast, so the first one
    (of those pruning keeps) runs, each time; a perf model, which ranks them by an estimated
    time, is not consulted either."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return
    if getattr(Autotuner._bench, "in_order", False):
        return

    def untimed(self, *args, config, **meta):
        return [0.0, 0.0, 0.0]

    prune = Autotuner.prune_configs

    def prune_unmodelled(self, kwargs):
        # A perf model estimates each configuration's time (the matmul lineage's from the
        # GPU's clocks, through nvidia-smi): equally fast here, none is pruned by it.
        model, self.perf_model = self.perf_model, None
        try:
            return prune(self, kwargs)
        finally:
            self.perf_model = model

    untimed.in_order = True
    Autotuner._bench = untimed
    Autotuner.prune_configs = prune_unmodelled


def _give_it_libdevice(interpreter) -> None:
    builder = getattr(interpreter, "interpreter_builder", None)
    semantic = getattr(interpreter, "interpreter_semantic", None)
    handle_type = getattr(interpreter, "TensorHandle", None)
    if builder is None or handle_type is None or getattr(builder, "has_libdevice", False):
        return
    try:
        import triton.language as tl
        import triton.language.extra.cuda.libdevice as cuda_libdevice
        import triton.language.extra.libdevice as portable_libdevice
        from triton.language.semantic import TritonSemantic
    except ImportError:
        return
    semantic = semantic or TritonSemantic(builder)

    def create_extern_elementwise(lib_name, lib_path, symbol, args, ret_type, is_pure):
        out = getattr(ret_type, "scalar", ret_type)
        result = interpreter_libdevice.implementation(symbol)(
            [a.data for a in args], interpreter._get_np_dtype(out))
        return handle_type(np.asarray(result), out)

    builder.create_extern_elementwise = create_extern_elementwise
    builder.has_libdevice = True
    # Called in a kernel, a libdevice function needs the semantic the compiler passes it (as
    # the interpreter passes it to `tl`'s builtins); the portable module's are stubs the
    # compiler replaces by the CUDA module's, so both names lead to the CUDA functions.
    for name, member in list(vars(cuda_libdevice).items()):
        if tl.core.is_builtin(member):
            def call(*args, _member=member, **kwargs):
                kwargs.pop("_semantic", None)
                return _member(*args, _semantic=semantic, **kwargs)
            setattr(cuda_libdevice, name, call)
            setattr(portable_libdevice, name, call)


def _tf32(x: np.ndarray) -> np.ndarray:
    """fp32 to TF32 as Triton's f32ToTF32 (`cvt.rna.tf32.f32`): to nearest at 10 mantissa
    bits, ties away from zero (adding half the dropped bits to the magnitude); Inf and NaN as
    they are."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(x), rounded, x)


def _dot_at_its_input_precision(interpreter) -> None:
    """`tl.dot` of fp32 operands runs at `input_precision`, TF32 by default: on a GPU each
    operand is rounded to TF32 (u = 2^-11) before the tensor-core products. The interpreter
    multiplies in fp32 whatever the precision, so a kernel that leaves the default on computed
    exactly on the CPU and in TF32 on the GPU, and PRC-01 could not see it here. The operands
    are rounded as the GPU rounds them; TF32x3 is Triton's three products of the operands'
    TF32 halves, BF16x3 and BF16x6 its products of bf16 parts (`_bf16_products`)."""
    builder = getattr(interpreter, "interpreter_builder", None)
    create_dot = getattr(builder, "create_dot", None)
    handle_type = getattr(interpreter, "TensorHandle", None)
    if create_dot is None or handle_type is None or getattr(create_dot, "rounds_tf32", False):
        return
    import triton.language as tl

    def dot(a, b, d, input_precision, max_num_imprecise_acc):
        how = getattr(input_precision, "name", "")
        if a.dtype != tl.float32 or b.dtype != tl.float32 or how not in (
                "TF32", "TF32x3", "BF16x3", "BF16x6"):
            return create_dot(a, b, d, input_precision, max_num_imprecise_acc)

        def at(x, y, acc):
            return create_dot(handle_type(x, tl.float32), handle_type(y, tl.float32), acc,
                              input_precision, max_num_imprecise_acc)

        if how.startswith("BF16"):
            return _bf16_products(a.data, b.data, d, how, at, handle_type)
        a_big, b_big = _tf32(a.data), _tf32(b.data)
        if how == "TF32":
            return at(a_big, b_big, d)
        a_small, b_small = a.data - a_big, b.data - b_big
        small = at(_tf32(a_small), b_big, d)
        small = at(a_big, _tf32(b_small), small)
        return at(a_big, b_big, small)

    dot.rounds_tf32 = True
    builder.create_dot = dot
    # The CUDA backend's precisions (triton.backends.nvidia's CUDAOptions); the interpreter's
    # options refuse bf16x3 and bf16x6, so a kernel asking for one raised on the CPU.
    options = getattr(builder, "options", None)
    allowed = getattr(options, "allowed_dot_input_precisions", None)
    if allowed is not None and dataclasses.is_dataclass(options):
        builder.options = dataclasses.replace(options, allowed_dot_input_precisions=tuple(
            dict.fromkeys((*allowed, "bf16x3", "bf16x6"))))


def _bf16_parts(x: np.ndarray, count: int) -> list[np.ndarray]:
    """fp32 split as Triton's F32DotTC pass splits it: each part `x` rounded to bf16 (to
    nearest even, arith.truncf), the next from what is left (fp32 subtraction)."""
    parts = []
    for i in range(count):
        part = interpreter_bf16.rounded_to_bf16(np.asarray(x, dtype=np.float32))
        parts.append(part)
        if i < count - 1:
            x = (x - part).astype(np.float32)
    return parts


def _bf16_products(a: np.ndarray, b: np.ndarray, d, how: str, at, handle_type):
    """`bf16x3` and `bf16x6` as Triton's F32DotTC pass computes them on a GPU: the fp32
    operands split into 2 (3) bf16 parts, the cross products of the parts whose orders add
    up to at most 1 (2), smallest first, from zero, NaN set to 0 (an Inf operand times its
    zero low part), then the product of the high parts, then the accumulator. Each product
    is of bf16 values, exact in fp32."""
    import triton.language as tl
    hi, mid, lo = 0, 1, 2
    a_parts = _bf16_parts(a, 3 if how == "BF16x6" else 2)
    b_parts = _bf16_parts(b, len(a_parts))
    pairs = [(mid, mid), (lo, hi), (hi, lo)] if how == "BF16x6" else []
    pairs += [(mid, hi), (hi, mid)]
    acc = handle_type(np.zeros_like(d.data, dtype=np.float32), tl.float32)
    for i, j in pairs:
        acc = at(a_parts[i], b_parts[j], acc)
    acc = handle_type(np.where(np.isnan(acc.data), np.float32(0), acc.data), tl.float32)
    acc = at(a_parts[hi], b_parts[hi], acc)
    return handle_type((acc.data + d.data).astype(np.float32), tl.float32)


class _NoPatches:
    def restore(self) -> None:
        pass


def _patch_the_language_once_a_launch(interpreter, launches: list[Launch]) -> None:
    """A launch patches `tl` for its kernel, and each device function it calls (`tl.sum`,
    `tl.max`: functions of Triton's standard library) patches its module's `tl` again, once a
    program: 0.4 of the 0.8 ms a program of a row reduction takes, most of a norm kernel's
    time over thousands of rows. Nothing restores a device function's patches before the
    launch ends, so within one launch the patches after the first of a module install equal
    functions again; they are left out. The first in each launch is made, as the interpreter
    makes it. So are the patches of a module's own names: a second pass over the same globals
    finds nothing left to patch, and listing them again was a fifth of a row reduction's
    time."""
    patch_lang = getattr(interpreter, "_patch_lang", None)
    if patch_lang is None or getattr(patch_lang, "once_a_launch", False):
        return
    import triton.language as tl

    def patch_once(fn):
        launch = launches[-1] if launches else None
        if launch is not None and id(fn.__globals__) in launch.reached:
            return _NoPatches()
        langs = {id(v) for v in fn.__globals__.values()
                 if inspect.ismodule(v) and v in (tl, tl.core)}
        if launch is not None and langs <= launch.patched:
            scope = _NoPatches()
        else:
            scope = patch_lang(fn)
            if launch is not None:
                launch.patched |= langs
                launch.scope = launch.scope or scope
        _patch_builtins_under_other_names(interpreter, fn.__globals__,
                                          scope if launch is None else launch.scope)
        _map_portable_libdevice_names(interpreter, fn.__globals__,
                                      scope if launch is None else launch.scope)
        if launch is not None:
            launch.reached.add(id(fn.__globals__))
        return scope

    patch_once.once_a_launch = True
    interpreter._patch_lang = patch_once


class _Globals:
    """A function's globals as attributes, as a patch scope sets and restores them."""

    def __init__(self, names: dict) -> None:
        object.__setattr__(self, "names", names)

    def __getattr__(self, name: str):
        try:
            return self.names[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value) -> None:
        self.names[name] = value

    def __delattr__(self, name: str) -> None:
        del self.names[name]


def _patch_builtins_under_other_names(interpreter, names: dict, scope) -> None:
    """A module may bind a builtin of `tl` to a name of its own (unsloth's kernels call
    `triton_cast = tl.cast`, imported from their utils): compiled Triton calls whatever builtin
    a global names, but the interpreter patches only `tl`'s own attributes, so the kernel's
    name reached the unpatched builtin and raised ("Did you forget to add @triton.jit ?").
    Each global of the function's module that is a builtin is patched as `tl`'s are, in the
    launch's scope, so that the launch's end puts the builtin back."""
    import triton.language as tl
    bound = [(name, member) for name, member in names.items()
             if not inspect.ismodule(member) and tl.core.is_builtin(member)]
    if not bound or not hasattr(scope, "set_attr") or not hasattr(interpreter, "_patch_attr"):
        return
    view = _Globals(names)
    for name, member in bound:
        interpreter._patch_attr(view, name, member, interpreter.interpreter_builder, scope)


# The module of libdevice's portable stubs, and what the CUDA backend's module map makes of it.
PORTABLE_LIBDEVICE = "triton.language.extra.libdevice"


def _map_portable_libdevice_names(interpreter, names: dict, scope) -> None:
    """The compiler replaces each global of a kernel's module whose `__module__` its backend
    maps by the mapped module's function of that name (CodeGenerator's `module_map`: the CUDA
    backend maps the portable libdevice, whose functions are stubs returning None, to its own).
    The worker gives the interpreter libdevice by setting the portable module's attributes to
    the CUDA functions (`_give_it_libdevice`), which reaches a name imported from that module
    afterwards but not a function of a copy of it: xformers' `libdevice_find("rsqrt")` executes
    the module afresh and binds its stub, so its RMSNorm kernels ran the stub and raised
    ("'NoneType' object has no attribute 'dtype'"). Each such global is the CUDA function, in
    the launch's scope, as compiled."""
    builder = getattr(interpreter, "interpreter_builder", None)
    if not getattr(builder, "has_libdevice", False) or not hasattr(scope, "set_attr"):
        return
    import triton.language.extra.cuda.libdevice as cuda_libdevice
    view = _Globals(names)
    for name, member in list(names.items()):
        if not inspect.ismodule(member) and getattr(member, "__module__", None) \
                == PORTABLE_LIBDEVICE and hasattr(cuda_libdevice, member.__name__):
            scope.set_attr(view, name, getattr(cuda_libdevice, member.__name__))


def _list_the_builtins_once(interpreter) -> None:
    """A launch's patch of `tl` lists each of its modules' members afresh to find the builtins
    to wrap (`inspect.getmembers` and `is_builtin` over hundreds of names): 0.17 of the 0.48 s
    of 200 launches of a small kernel under cProfile. What a module holds does not change
    within a worker, so each module's builtins are listed at its first patch and wrapped from
    that list afterwards. A later listing would skip those a device function's patch left in
    place (its wrappers are not builtins), which keeps the same wrappers of the same members;
    wrapping them again from the list installs equal functions."""
    patch_builtin = getattr(interpreter, "_patch_builtin", None)
    if patch_builtin is None or getattr(patch_builtin, "listed_once", False) or not hasattr(
            interpreter, "_patch_attr"):
        return
    import triton.language as tl
    listed: dict[object, list[tuple[str, object]]] = {}  # a module or class: its builtins

    def patch_builtin_listed(pkg, builder, scope) -> None:
        if pkg not in listed:
            listed[pkg] = [(name, member) for name, member in inspect.getmembers(pkg)
                           if tl.core.is_builtin(member)]
        for name, member in listed[pkg]:
            interpreter._patch_attr(pkg, name, member, builder, scope)

    patch_builtin_listed.listed_once = True
    interpreter._patch_builtin = patch_builtin_listed


def _type_float_arguments(interpreter) -> None:
    convert = getattr(interpreter, "_implicit_cvt", None)
    if convert is None or getattr(convert, "types_floats", False):
        return
    try:
        import triton.language as tl
        from triton.runtime.jit import mangle_type
    except ImportError:
        return
    handle_type = getattr(interpreter, "TensorHandle", None)
    if handle_type is None:
        return

    def implicit_cvt(arg):
        if type(arg) is float:  # bool and int are the interpreter's own cases
            ty = tl.str_to_ty(mangle_type(arg), None)
            with np.errstate(over="ignore"):  # beyond fp32's range: +-inf, as compiled
                value = np.array([arg], dtype=interpreter._get_np_dtype(ty))
            return tl.tensor(handle_type(value, ty), ty)
        return convert(arg)

    implicit_cvt.types_floats = True
    interpreter._implicit_cvt = implicit_cvt


def _index_by_a_scalar_s_one_element(interpreter) -> None:
    """A scalar (an int argument, a loop bound computed from one) is a one-element array in
    the interpreter, and a launch's patch of `tl` makes it an index (`range(0, K, BLOCK_K)`).
    Triton 3.2 to 3.6 read the index as `int(data)`, which numpy 2 refuses for a 1-d array
    ("only 0-dimensional arrays can be converted to Python scalars"): every kernel looping to
    a runtime bound raised on the CPU (Triton 3.6's interpreter: the matmul controls rejected
    by the native check). Where the interpreter's index refuses a one-element array, the
    index is its one element, as Triton 3.7 on reads it (`int(data.squeeze())`)."""
    patch_lang_tensor = getattr(interpreter, "_patch_lang_tensor", None)
    if patch_lang_tensor is None or getattr(patch_lang_tensor, "indexes_one_element", False):
        return

    def patch_with_its_index(tensor, *scope) -> None:  # Triton 3.6 on passes a patch scope
        patch_lang_tensor(tensor, *scope)
        try:
            tensor.__index__(_ONE_ELEMENT_SCALAR)
        except TypeError:
            if scope:
                scope[0].set_attr(tensor, "__index__", _index_of_one_element)
            else:
                tensor.__index__ = _index_of_one_element

    patch_with_its_index.indexes_one_element = True
    interpreter._patch_lang_tensor = patch_with_its_index


def _index_of_one_element(scalar) -> int:
    return int(scalar.handle.data.squeeze())


# What the interpreter holds for a scalar: a tensor whose handle's data has one element, 1-d.
_ONE_ELEMENT_SCALAR = types.SimpleNamespace(handle=types.SimpleNamespace(data=np.array([1])))


def _max_and_min_drop_nan_as_compiled(interpreter) -> None:
    """`tl.maximum`, `tl.minimum` and `tl.clamp` with `propagate_nan` left NONE (the default)
    compile to maxnum, minnum (PTX `max.f32`, `min.f32`): a NaN operand gives the other one.
    Triton before 3.8 computed them with np.maximum, np.minimum and np.clip, which keep the
    NaN: a kernel that drops NaN (a ReLU as `tl.maximum(x, 0.0)`) kept it on the CPU and
    passed EXC-01 (the red team's 19/20 and 31/0 under Triton 3.6). Where the interpreter's
    keeps a NaN, each is computed as compiled (np.fmax, np.fmin); `propagate_nan=ALL` stays
    the interpreter's (maximumf, minimumf, clamp through np.clip)."""
    builder = getattr(interpreter, "interpreter_builder", None)
    handle_type = getattr(interpreter, "TensorHandle", None)
    propagate = getattr(getattr(interpreter, "_ir", None), "PROPAGATE_NAN", None)
    if builder is None or handle_type is None or propagate is None:
        return
    import triton.language as tl

    def fp32(value: float):
        return handle_type(np.array([value], dtype=np.float32), tl.float32)

    def keeps_nan(out) -> bool:
        return bool(np.isnan(out.data).any())

    nan, one = fp32(np.nan), fp32(1.0)
    if keeps_nan(builder.create_maxnumf(nan, one)):
        builder.create_maxnumf = lambda lhs, rhs: builder.binary_op(lhs, rhs, np.fmax)
    if keeps_nan(builder.create_minnumf(nan, one)):
        builder.create_minnumf = lambda lhs, rhs: builder.binary_op(lhs, rhs, np.fmin)
    clamp = builder.create_clampf
    if keeps_nan(clamp(fp32(np.nan), fp32(0.0), one, propagate.NONE)):

        def create_clampf(x, lo, hi, propagate_nans):
            if propagate_nans != propagate.NONE:
                return clamp(x, lo, hi, propagate_nans)
            return builder.binary_op(builder.binary_op(x, lo, np.fmax), hi, np.fmin)

        builder.create_clampf = create_clampf


# Operands whose fused product-sum differs from the product rounded, then the sum: (1 + 2^-12)^2
# - (1 + 2^-11) is 2^-24 exactly, and 0 where the square is rounded to fp32 first.
FMA_PROBE = (1 + 2**-12, 1 + 2**-12, -(1 + 2**-11))


def _atomic_adds_of_16_bit_floats(interpreter) -> None:
    """`tl.atomic_add` into fp16 or bf16 memory: a GPU adds and rounds to nearest even
    (`atom.add.noftz.f16`, `.bf16`), a sum past the range giving +-inf. The interpreter's
    fp16 add raised where the sum overflowed ("overflow to signed inf": applied-ai's GPTQ
    split-K GEMM, whose fp16 partials meet at atomics, raised at CMP-01's large inputs) and
    refused bf16 ("Unsupported data type"). Here each element is added in order (the
    programs run one at a time; a block's repeated addresses see each other's adds), exactly
    in fp64 and rounded once to the memory's format; the old values are returned."""
    builder = getattr(interpreter, "interpreter_builder", None)
    handle_type = getattr(interpreter, "TensorHandle", None)
    memory = getattr(interpreter, "_interpreter", None)
    rmw = getattr(builder, "create_atomic_rmw", None)
    if rmw is None or handle_type is None or getattr(rmw, "sixteen_bit_floats", False):
        return
    import triton.language as tl
    from triton._C.libtriton import ir
    formats = {  # stored as, widened to fp64 exactly, rounded from fp64 to nearest even
        tl.float16: (np.float16, lambda d: d.astype(np.float64), lambda x: x.astype(np.float16)),
        tl.bfloat16: (np.uint16, lambda d: interpreter_bf16._bf16_to_fp32(d).astype(np.float64),
                      interpreter_bf16._fp32_to_bf16),
    }

    def create_atomic_rmw(rmw_op, ptr, val, mask, sem, scope):
        kind = val.dtype.scalar
        if rmw_op != ir.ATOMIC_OP.FADD or kind not in formats:
            return rmw(rmw_op, ptr, val, mask, sem, scope)
        stored, widen, narrow = formats[kind]
        ptrs = np.atleast_1d(ptr.data)
        values = np.broadcast_to(np.atleast_1d(val.data), ptrs.shape)
        on = np.broadcast_to(np.atleast_1d(mask.data), ptrs.shape)
        old = np.zeros(ptrs.shape, dtype=stored)
        one = np.ones(1, dtype=bool)
        for i in zip(*np.nonzero(on)):
            at = ptrs[i].reshape(1)
            now = memory.load(at, one, np.zeros(1, dtype=stored), stored)
            with np.errstate(over="ignore"):
                memory.store(at, narrow(widen(now) + widen(values[i].reshape(1))), one)
            old[i] = now[0]
        return handle_type(old.reshape(np.shape(ptr.data)), kind)

    create_atomic_rmw.sixteen_bit_floats = True
    builder.create_atomic_rmw = create_atomic_rmw


def _fma_rounded_once(interpreter) -> None:
    """`tl.fma` rounds once on a GPU (fma.rn); Triton before 3.9 computed `x * y + z` in the
    operands' type, rounding the product first: an error-free product (`fma(a, b, -a * b)`,
    the low half of a compensated sum or dot) came out 0 on the CPU. Where the interpreter's
    rounds twice, fp32 is `_fp32_fma`, fp64 libdevice's exact `fma.rn`
    (kdiff.sandbox.interpreter_libdevice), narrower floats computed in fp64 and rounded once."""
    builder = getattr(interpreter, "interpreter_builder", None)
    handle_type = getattr(interpreter, "TensorHandle", None)
    if builder is None or handle_type is None:
        return
    import triton.language as tl
    x, y, z = (handle_type(np.array([v], dtype=np.float32), tl.float32) for v in FMA_PROBE)
    if float(builder.create_fma(x, y, z).data[0]) == 2**-24:
        return
    fp64_fma = interpreter_libdevice.implementation("__nv_fma_rn")

    def create_fma(x, y, z):
        out = z.data.dtype
        if out == np.float32:
            result = _fp32_fma(x.data, y.data, z.data)
        elif out == np.float64:
            result = fp64_fma([x.data, y.data, z.data], out)
        else:
            with np.errstate(all="ignore"):
                result = (np.multiply(x.data, y.data, dtype=np.float64) + z.data).astype(out)
        return handle_type(result, z.dtype.scalar)

    builder.create_fma = create_fma


def _fp32_fma(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """fma.rn.f32: the product is exact in fp64 (48 of 53 bits); the sum is rounded to odd in
    fp64 (where TwoSum's remainder is not 0, the odd one of the two fp64 values around it),
    then to fp32 to nearest, which is then correctly rounded (53 >= 24 + 2)."""
    with np.errstate(all="ignore"):
        p = np.multiply(x, y, dtype=np.float64)
        c = np.asarray(z, dtype=np.float64)
        s = p + c
        t = s - p
        rest = (p - (s - t)) + (c - t)  # TwoSum: p + c = s + rest exactly
        even = (s.view(np.uint64) & np.uint64(1)) == 0
        inexact = np.isfinite(s) & (rest != 0) & even
        odd = np.where(inexact, np.nextafter(s, np.copysign(np.inf, rest)), s)
        return odd.astype(np.float32)


def _comparisons_typed_int1(interpreter) -> None:
    """A comparison gives int1, compiled; the interpreter's handle kept its operands' type
    (fp32) over boolean data. A block never asks, but a scalar comparison broadcast to a
    block is splatted at its handle's type: `tl.broadcast_to(m != m, (B,))` came out as fp32
    0.0/1.0, and `~` of it raised ("ufunc 'bitwise_xor' not supported": FlagGems' cummax and
    cummin, whose loop over a long axis asks it of the running maximum). The handle of a
    comparison is int1."""
    builder = getattr(interpreter, "interpreter_builder", None)
    handle_type = getattr(interpreter, "TensorHandle", None)
    if builder is None or handle_type is None or getattr(builder, "comparisons_int1", False):
        return
    import triton.language as tl
    binary = builder.binary_op

    def binary_op(lhs, rhs, op):
        out = binary(lhs, rhs, op)
        return handle_type(out.data, tl.int1) if op in interpreter_bf16.COMPARISONS else out

    builder.binary_op = binary_op
    builder.comparisons_int1 = True


def _dtypes_answer_value(interpreter) -> None:
    """FlagGems' reductions call `get_dtype_min(x.type.element_ty)`, a device function that
    reads `dtype.value`: compiled, the argument is a constexpr (`normalize_value` makes every
    argument that is no tensor one), whose `.value` is the dtype, and whose other attributes
    and `is` comparisons are the dtype's (the code generator unwraps a constexpr for them).
    The interpreter passed the dtype itself, and the call raised "'dtype' object has no
    attribute 'value'" (argmax, amax, max, cummax: the native check and every gate, on the
    CPU only). A dtype answers `.value` with itself; wrapping it instead would break `dtype is
    tl.float32`, which FlagGems' topk asks of the same arguments."""
    import triton.language as tl
    if not hasattr(tl.dtype, "value"):
        tl.dtype.value = property(lambda self: self)


# A constexpr's binary operators: with a tensor operand the code generator calls the tensor's.
CONSTEXPR_BINARY_OPERATORS = (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__pow__", "__rpow__",
    "__and__", "__or__", "__xor__", "__lshift__", "__rshift__",
    "__gt__", "__rgt__", "__ge__", "__rge__", "__lt__", "__rlt__", "__le__", "__rle__",
    "__eq__", "__ne__",
)


def _constexpr_operators_yield_tensors() -> None:
    """Compiled, `C * x` with C a module-level `tl.constexpr(float)` and x a tensor is the
    tensor's product: the code generator's binary operators take the tensor's method when
    either operand is one (`_apply_binary_method`, by operator priority). The interpreter ran
    constexpr's own `__mul__`, `constexpr(C.value * x)`: the right tensor, wrapped as a
    constexpr, which the next `tl.exp` refused ("cannot convert ... tensor to tensor"):
    lightllm's gelu_and_mul (`_kAlpha * (x + 0.044715 * x * x * x)`, then `tl.sigmoid`)
    failed the native check on the CPU. A constexpr operator whose result holds a tensor
    answers the tensor, as the compiled operator does."""
    import triton.language as tl
    if getattr(tl.constexpr, "operators_yield_tensors", False):
        return

    def yielding_tensors(method):
        @functools.wraps(method)
        def operator(self, other):
            result = method(self, other)
            value = getattr(result, "value", None)
            return value if isinstance(value, tl.tensor) else result
        return operator

    for name in CONSTEXPR_BINARY_OPERATORS:
        if name in vars(tl.constexpr):
            setattr(tl.constexpr, name, yielding_tensors(vars(tl.constexpr)[name]))
    tl.constexpr.operators_yield_tensors = True


# The name under which rewritten kernels find _tensor_range: the interpreter lends its module's
# globals to every function it rewrites.
TENSOR_RANGE = "kdiff_tensor_range"


def _loop_variables_as_tensors(interpreter) -> None:
    """In a compiled kernel `for i in range(n)` (and `tl.range`) is a loop whose `i` is an int32
    tensor (int64 where a bound is), with a tensor's methods: fla's chunk kernels write
    `i_t.to(tl.int64)`, which raised in the interpreter, where `i` is a Python int. The worker's
    interpreter rewrites such loops to step through LoopIndex values, which answer a tensor's
    methods as a tensor of the compiled type; `tl.static_range` stays constexpr."""
    rewriter = getattr(interpreter, "FunctionRewriter", None)
    transformer = getattr(rewriter, "ast_transformer", None)
    if transformer is None or getattr(transformer, "tensor_loops", False):
        return

    class TensorLoops(type(transformer)):
        tensor_loops = True

        def visit_For(self, node: ast.For) -> ast.For:
            node = self.generic_visit(node)
            call = node.iter
            if isinstance(call, ast.Call) and (
                    isinstance(call.func, ast.Name) and call.func.id == "range"
                    or isinstance(call.func, ast.Attribute) and call.func.attr == "range"):
                node.iter = ast.Call(func=ast.Name(TENSOR_RANGE, ast.Load()),
                                     args=[call.func, *call.args], keywords=call.keywords)
            return node

    rewriter.ast_transformer = TensorLoops()
    setattr(interpreter, TENSOR_RANGE, functools.partial(_tensor_range, interpreter))


class LoopIndex(int):
    """A loop's index: a Python int in arithmetic (as fast as the interpreter's own loops),
    and for anything else a tensor's (`.to`, `.dtype`), of the type Triton gives it."""

    def tensor(self):
        import triton.language as tl
        ty = self.ty  # type: ignore[attr-defined]
        value = np.array([int(self)], dtype=np.int64 if ty is tl.int64 else np.int32)
        return tl.tensor(self.interpreter.TensorHandle(value, ty), ty)  # type: ignore[attr-defined]

    def __getattr__(self, name: str):
        if name in ("ty", "interpreter"):
            raise AttributeError(name)
        return getattr(self.tensor(), name)


def _tensor_range(interpreter, make_range, *args, **kwargs):
    """The values of `make_range(*args, **kwargs)` as LoopIndex values: int64 where a bound is
    an int64 tensor or a value leaves int32, else int32 (Triton's induction variable)."""
    import triton.language as tl
    wide = any(isinstance(a, tl.tensor) and a.dtype in (tl.int64, tl.uint64) for a in args)
    for i in make_range(*args, **kwargs):
        index = LoopIndex(i)
        index.ty = tl.int64 if wide or not -2**31 <= i < 2**31 else tl.int32
        index.interpreter = interpreter
        yield index


# The names under which rewritten kernels find _boolean and _not (as TENSOR_RANGE).
BOOLEAN = "kdiff_boolean"
NOT = "kdiff_not"


def _boolean_operators_as_compiled(interpreter) -> None:
    """Compiled Triton takes `and`, `or` and `not` of tensors elementwise (logical_and,
    logical_or, `__not__`: deprecated for blocks, not refused); the interpreter ran them as
    Python's, where a block is always true. FlagGems' log_softmax masks with
    `m_offset[:, None] < M and n_offset[None, :] < N` (its rows past M were read and written:
    the worker crashed at B = 1), its cross entropy with `not (tgt == ignore_index) and
    tgt_mask` (every row ignored). The worker's interpreter rewrites them as the compiler
    evaluates them; a boolean operation holding an assignment expression is left as it is,
    since its operands are evaluated in functions of their own."""
    rewriter = getattr(interpreter, "FunctionRewriter", None)
    transformer = getattr(rewriter, "ast_transformer", None)
    if transformer is None or getattr(transformer, "compiled_booleans", False):
        return
    no_arguments = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                 defaults=[])

    class CompiledBooleans(type(transformer)):
        compiled_booleans = True

        def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
            node = self.generic_visit(node)
            if any(isinstance(n, ast.NamedExpr) for n in ast.walk(node)):
                return node
            operands = [ast.Lambda(args=no_arguments, body=value) for value in node.values]
            call = ast.Call(func=ast.Name(BOOLEAN, ast.Load()),
                            args=[ast.Constant(isinstance(node.op, ast.And)), *operands],
                            keywords=[])
            return ast.copy_location(call, node)

        def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
            node = self.generic_visit(node)
            if not isinstance(node.op, ast.Not):
                return node
            call = ast.Call(func=ast.Name(NOT, ast.Load()), args=[node.operand], keywords=[])
            return ast.copy_location(call, node)

    if not _visits_assigned_values(CompiledBooleans):
        # Triton before 3.9 wraps an assignment's value without visiting it: `mask = rows < M
        # and cols < N` stayed Python's `and` (tests/test_false_rejects.py's honest band was
        # rejected under Triton 3.6); the value is visited first.
        def visit_assigned_value(self, node: ast.Assign) -> ast.AST:
            node.value = self.visit(node.value)
            return super(CompiledBooleans, self).visit_Assign(node)

        CompiledBooleans.visit_Assign = visit_assigned_value
    rewriter.ast_transformer = CompiledBooleans()
    setattr(interpreter, BOOLEAN, _boolean)
    setattr(interpreter, NOT, _not)


def _visits_assigned_values(transformer_type: type) -> bool:
    """Whether a transformer of this type visits the value of `x = 0`."""

    class Probe(transformer_type):
        visited = False

        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            Probe.visited = True
            return node

    Probe().visit(ast.parse("x = 0"))
    return Probe.visited


def _boolean(conjunction: bool, *operands):
    """`and` (conjunction) or `or` of the operands, each a function giving its value, as the
    code generator's `_apply_boolean_values` evaluates them: in order, a constant that decides
    the result ends it and is the result, the tensors are combined elementwise, and with no
    tensor the last value is the result."""
    import triton.language as tl
    tensors, value = [], None
    for operand in operands:
        value = operand()
        if isinstance(value, tl.tensor):
            tensors.append(value)
        elif bool(value) is not conjunction:
            return value
    if not tensors:
        return value
    result = tensors[-1]
    for tensor in reversed(tensors[:-1]):
        result = tensor.logical_and(result) if conjunction else tensor.logical_or(result)
    return result


def _not(value):
    import triton.language as tl
    return value.__not__() if isinstance(value, tl.tensor) else not value


def _drop_the_overflow_sanitiser(interpreter) -> None:
    builder = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if options is None or not dataclasses.is_dataclass(options):
        return
    if getattr(options, "debug", True) or not getattr(options, "sanitize_overflow", False):
        return  # with debug on the checks assert: they stay
    builder.options = dataclasses.replace(options, sanitize_overflow=False)
