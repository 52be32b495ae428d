"""The worker's interpreter (kdiff.sandbox.interpreter_device): without the work whose result
it drops, kernels give the same bits; float arguments are typed as compiled Triton types them;
a worker and a TritonBench script run with it installed."""
from __future__ import annotations

import ast
import builtins
import dataclasses
import itertools
import os
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before this module decorates its kernels

import torch

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
from triton.runtime import interpreter  # noqa: E402

from kdiff.sandbox import interpreter_device, interpreter_order  # noqa: E402
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
    """The interpreter as Triton ships it, restored after the test: install() changes this
    process's Triton for the tests after it otherwise."""
    import triton.language.extra.cuda.libdevice as cuda_libdevice
    import triton.language.extra.libdevice as portable_libdevice
    from triton.runtime.autotuner import Autotuner
    builder = interpreter.interpreter_builder
    saved_builder = dict(vars(builder))
    from triton.language.semantic import TritonSemantic
    module_names = ("_implicit_cvt", "_patch_lang", "_patch_builtin", "_patch_lang_tensor",
                    "_get_np_dtype", "_patch_attr")
    saved_module = {n: getattr(interpreter, n) for n in module_names}
    classes = {c: dict(vars(c)) for c in (interpreter.GridExecutor, interpreter.ReduceOps,
                                          interpreter.ScanOps, tl.dtype, tl.core.block_type,
                                          tl.core.tensor, TritonSemantic)}
    modules = {m: dict(vars(m)) for m in (cuda_libdevice, portable_libdevice)}
    bench = Autotuner._bench
    capability = torch.cuda.get_device_capability
    current, properties = torch.cuda.current_device, torch.cuda.get_device_properties
    from triton.runtime import driver
    active = driver._active
    prune = Autotuner.prune_configs
    import torch.utils._triton as torch_triton
    has_triton = torch_triton.has_triton
    current_accelerator = torch.accelerator.current_accelerator
    yield
    torch.accelerator.current_accelerator = current_accelerator
    torch_triton.has_triton = has_triton
    driver._active = active
    Autotuner.prune_configs = prune
    torch.cuda.get_device_capability = capability
    torch.cuda.current_device, torch.cuda.get_device_properties = current, properties
    Autotuner._bench = bench
    for name in set(vars(builder)) - set(saved_builder):
        delattr(builder, name)
    vars(builder).update(saved_builder)
    for name, value in saved_module.items():
        setattr(interpreter, name, value)
    for cls, saved in classes.items():
        added = set(vars(cls)) - set(saved)
        for name in added:
            delattr(cls, name)
        if "__new__" in added:  # once set, a delattr does not give back CPython's own
            cls.__new__ = staticmethod(lambda cls, *args, **kwargs: object.__new__(cls))
        for name, value in saved.items():
            if vars(cls).get(name) is not value:
                setattr(cls, name, value)
    for module, saved in modules.items():
        vars(module).update(saved)


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


@triton.jit
def _shift_into(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n) * 2 + 1, mask=offs < n)


def _shifted_in_place(wrap=lambda x: x) -> tuple[torch.Tensor, int]:
    """A launch whose two arguments are views of one storage (the input its first half, the
    output its second), and how many storages the interpreter copied to the host for it."""
    x = torch.arange(8, dtype=torch.float32)
    copied = []
    to_host = torch.UntypedStorage.cpu

    def counted(storage):
        copied.append(storage)
        return to_host(storage)

    torch.UntypedStorage.cpu = counted
    try:
        _shift_into[(2,)](wrap(x[:4]), wrap(x[4:]), 4, BLOCK=2)
    finally:
        torch.UntypedStorage.cpu = to_host
    return x, len(copied)


def test_cpu_tensor_arguments_are_used_in_place_with_the_same_bits(shipped_interpreter):
    copied_before = _shifted_in_place()
    interpreter_device.install()
    in_place = _shifted_in_place()
    assert torch.equal(copied_before[0], in_place[0])
    assert copied_before[1] == 1 and in_place[1] == 0  # the one storage both views share
    # a wrapped tensor is copied to the host and back, as the interpreter does
    wrapped = _shifted_in_place(lambda x: triton.reinterpret(x, tl.float32))
    assert torch.equal(wrapped[0], in_place[0]) and wrapped[1] == 1


def test_each_module_s_builtins_are_listed_at_its_first_patch(shipped_interpreter,
                                                             monkeypatch):
    """A launch's patch of `tl` wraps the builtins listed at each module's first patch, not a
    fresh listing of its members each launch, and the kernel gives the same bits."""
    import inspect
    shipped = _run_mixed()
    interpreter_device.install()
    languages = (tl, tl.core, tl.math, tl.core.tensor, tl.core.tensor_descriptor_base)
    listings = []
    real = inspect.getmembers

    def counting(obj, *args):
        if any(obj is m for m in languages):
            listings.append(obj)
        return real(obj, *args)
    monkeypatch.setattr(inspect, "getmembers", counting)
    first = _run_mixed()
    n = len(listings)
    second = _run_mixed()
    assert n > 0 and len(listings) == n, (n, len(listings))
    for a, b, c in zip(shipped, first, second):
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))
        assert torch.equal(b.view(torch.int32), c.view(torch.int32))


@triton.jit
def _broadcasting_kernel(x_ptr, y_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)  # (M, N)
    col = tl.load(y_ptr + cols)  # (1, N)
    row = tl.load(y_ptr + rows).to(tl.float16)  # (M, 1), another element type
    # one shape of two element types, and each operand broadcast against the other
    out = x * col + row + x.to(tl.float16) * 3 + (rows + cols)
    tl.store(out_ptr + rows * N + cols, out)


def _run_broadcasting() -> torch.Tensor:
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(4, 8, generator=gen), torch.randn(8, generator=gen)
    out = torch.empty(4, 8)
    _broadcasting_kernel[(1,)](x, y, out, M=4, N=8)
    return out


def test_types_built_once_give_the_same_bits(shipped_interpreter):
    """Block types are built once per value, a type's numpy dtype found once, and operands of
    one shape kept as they are: a kernel broadcasting each way, across element types, gives
    Triton's bits, and a shape Triton refuses is still refused."""
    shipped = _run_broadcasting()
    with pytest.raises(ValueError) as refused:
        tl.core.block_type(tl.float32, [3])
    interpreter_device.install()
    assert torch.equal(shipped.view(torch.int32), _run_broadcasting().view(torch.int32))
    four_by_eight = tl.core.block_type(tl.float32, [4, 8])
    assert four_by_eight is tl.core.block_type(tl.float32, [tl.constexpr(4), 8])
    assert four_by_eight is not tl.core.block_type(tl.float16, [4, 8])
    assert four_by_eight is not tl.core.block_type(tl.float32, [8, 4])
    pointers = tl.core.block_type(tl.pointer_type(tl.float32), [4])
    assert pointers is tl.core.block_type(tl.pointer_type(tl.float32), [4])
    assert pointers is not tl.core.block_type(tl.pointer_type(tl.float32, const=True), [4])
    import copy
    assert copy.copy(four_by_eight) == four_by_eight
    with pytest.raises(ValueError) as still_refused:
        tl.core.block_type(tl.float32, [3])
    assert str(still_refused.value) == str(refused.value)


def _built(tensor) -> tuple:
    """A tensor as Triton's constructor leaves it: its attributes in order, and its shape's
    constexprs, tuple and tuple type and its element count by value and class."""
    shape = tensor.shape
    return (list(vars(tensor)), tensor.handle, tensor.type, tensor.dtype, type(shape),
            list(vars(shape)), [(type(c), c.value, type(c.value), c.type) for c in shape.values],
            shape.type.types, shape.type.fields, type(tensor.numel), tensor.numel.value,
            type(tensor.numel.value), tensor.numel.type)


def test_tensor_shapes_built_once_per_type_as_triton_builds_them(shipped_interpreter):
    """A tensor of a scalar, pointer or block type (sizes given as ints or constexprs, a
    block type copied) is built as Triton's constructor builds it, and its shape's tuple is
    its own: assigning into one tensor's leaves another's of the same type unchanged. The
    element count, a constexpr nothing changes, is one per type."""
    import copy
    handle = interpreter.TensorHandle(np.zeros(8, np.float32), tl.float32)

    def types():
        four_by_two = tl.core.block_type(tl.float32, [4, tl.constexpr(2)])
        return [tl.float32, tl.int1, tl.pointer_type(tl.float16), four_by_two,
                tl.core.block_type(tl.pointer_type(tl.int8), [8]), copy.copy(four_by_two)]

    shipped = [_built(tl.tensor(handle, ty)) for ty in types()]
    interpreter_device.install()
    assert [_built(tl.tensor(handle, ty)) for ty in types()] == shipped
    one, other = (tl.tensor(handle, tl.core.block_type(tl.float32, [4, 2])) for _ in range(2))
    assert one.numel is other.numel  # built once
    one.shape._setitem(0, tl.constexpr(2))
    assert [c.value for c in other.shape] == [4, 2] and other.shape.type.types[0].value == 4


_BUILTIN_CALLS: list[tuple[str, object, list]] = []


@tl.core.builtin
def _recorded(x, scale=1, _semantic=None):
    """A builtin of this module's own: who called it, with which semantic and arguments."""
    _BUILTIN_CALLS.append((sys._getframe(2).f_code.co_name, _semantic, [x, scale]))
    return _semantic.mul(x, scale, False)


@triton.jit
def _calls_builtins(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, _recorded(x) + _recorded(x, scale=2, _semantic=None) * x)


def test_a_builtin_reaches_its_function_in_one_call_with_the_interpreter_s_semantic(
        shipped_interpreter, monkeypatch):
    """Called in a kernel, a builtin's function runs directly under the kernel's call (not
    through the interpreter's lambda and Triton's wrapper), with the interpreter's semantic in
    place of one passed and the other arguments as given, and gives the same bits."""
    patch_attr = interpreter._patch_attr
    interpreter_device.install()

    def run() -> tuple[torch.Tensor, list]:
        x, out = torch.arange(8.0) / 3, torch.empty(8)
        _BUILTIN_CALLS.clear()
        _calls_builtins[(1,)](x, out, BLOCK=8)
        return out, [(caller, semantic, args[1]) for caller, semantic, args in _BUILTIN_CALLS]

    with monkeypatch.context() as patched:
        patched.setattr(interpreter, "_patch_attr", patch_attr)
        shipped, shipped_calls = run()
    out, calls = run()
    assert torch.equal(shipped.view(torch.int32), out.view(torch.int32))
    semantic = interpreter.interpreter_semantic
    assert shipped_calls == [("<lambda>", semantic, 1), ("<lambda>", semantic, 2)]
    assert calls == [("_calls_builtins", semantic, 1), ("_calls_builtins", semantic, 2)]


def test_a_worker_that_compiles_its_kernels_keeps_triton_s_frontend(shipped_interpreter,
                                                                     monkeypatch):
    """A CUDA worker installs the interpreter's patches too, and its kernels go through
    Triton's frontend to the GPU's code: the shortcuts per operation (the type check decided
    once per pair of types, tensors' shapes built once per type, builtins called directly)
    stay out of it; where kernels are interpreted they are in."""
    from triton.language.semantic import TritonSemantic
    shipped = (TritonSemantic.binary_op_type_checking_impl, tl.core.tensor.__init__,
               interpreter._patch_attr)
    monkeypatch.delenv("TRITON_INTERPRET")
    interpreter_device.install()
    assert (TritonSemantic.binary_op_type_checking_impl, tl.core.tensor.__init__,
            interpreter._patch_attr) == shipped
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    interpreter_device.install()
    assert TritonSemantic.binary_op_type_checking_impl is not shipped[0]
    assert tl.core.tensor.__init__ is not shipped[1]
    assert interpreter._patch_attr is not shipped[2]


def test_a_program_of_the_worker_s_interpreter_imports_nothing(shipped_interpreter,
                                                               monkeypatch):
    """kdiff's code run for every operation of every program imports nothing there: an import
    statement (of a module loaded long before) in the block types' keys was a third of their
    time. A launch of three programs makes the import statements of kdiff's one of one makes
    (Triton's own per program are its own)."""
    interpreter_device.install()
    _run_mixed()  # its first launch: what is imported once
    real, imported = builtins.__import__, []
    kdiff_code = str(Path(interpreter_device.__file__).parent.parent)

    def counting(name, *args, **kwargs):
        caller = sys._getframe(1).f_code
        if caller.co_filename.startswith(kdiff_code):
            imported.append(f"{name} in {caller.co_name}")
        return real(name, *args, **kwargs)

    def imports(n: int) -> list[str]:
        x, k = torch.randn(n), torch.zeros(n, dtype=torch.int32)
        out, hashed = torch.empty(n), torch.empty(n, dtype=torch.int32)
        imported.clear()
        with monkeypatch.context() as patched:
            patched.setattr(builtins, "__import__", counting)
            _mixed_kernel[(triton.cdiv(n, 128),)](x, k, out, hashed, n, BLOCK=128)
        return list(imported)

    assert imports(3 * 128) == imports(128)


def test_operands_of_one_shape_skip_triton_s_broadcast(shipped_interpreter, monkeypatch):
    """Two blocks of one shape and other element types (a masked load's pointers and mask) are
    returned as they are, without Triton's broadcast, which would return them unchanged; blocks
    of other shapes still go through it."""
    from triton.language.semantic import TritonSemantic
    reached = []
    broadcast = TritonSemantic.broadcast_impl_value
    monkeypatch.setattr(TritonSemantic, "broadcast_impl_value",
                        lambda self, lhs, rhs: reached.append(1) or broadcast(self, lhs, rhs))
    interpreter_device.install()
    semantic = interpreter.interpreter_semantic

    def block(element, shape, np_dtype):
        handle = interpreter.TensorHandle(np.zeros(shape, np_dtype), element)
        return tl.tensor(handle, tl.core.block_type(element, list(shape)))

    pointers = block(tl.pointer_type(tl.float32), (4, 8), np.uint64)
    mask = block(tl.int1, (4, 8), np.bool_)
    assert semantic.broadcast_impl_value(pointers, mask) == (pointers, mask) and not reached
    _, widened = semantic.broadcast_impl_value(pointers, block(tl.int1, (4, 1), np.bool_))
    assert reached and widened.shape == [4, 8]


# Element types as the interpreter holds them: bf16 as its bit patterns, pointers as addresses.
_ELEMENTS = [(tl.float32, np.float32), (tl.float16, np.float16), (tl.bfloat16, np.uint16),
             (tl.float64, np.float64), (tl.int8, np.int8), (tl.int16, np.int16),
             (tl.int32, np.int32), (tl.int64, np.int64), (tl.uint8, np.uint8),
             (tl.uint32, np.uint32), (tl.int1, np.bool_),
             (tl.pointer_type(tl.float32), np.uint64)]
# Pairs of shapes: one shape, a scalar (a 0-d tensor, held as one element) against a block
# each way, blocks broadcast each way or of another rank, and shapes that cannot broadcast.
_SHAPES = [((4,), (4,)), ((), (2, 4)), ((2, 4), ()), ((1, 4), (2, 4)), ((2, 1), (1, 4)),
           ((4,), (2, 4)), ((2, 4), (4, 2)), ((), ())]
_NUMBERS = [3, -1, 2 ** 40, 0.5, 1e300, True]


def _operand(element, np_dtype, shape):
    values = np.array([3, -2, 5, 7, 1, -1, 6, 2][:max(1, int(np.prod(shape)))])
    if np_dtype == np.uint16:  # bf16's bits of these values plus a quarter
        data = (torch.tensor(values + 0.25).bfloat16().view(torch.int16).numpy()
                .view(np.uint16))
    elif element.is_ptr():
        data = (4096 + 4 * np.abs(values)).astype(np.uint64)
    else:
        data = (np.abs(values) if element.is_int_unsigned() else values + 0.25 * element.is_floating()
                ).astype(np_dtype)
    handle = interpreter.TensorHandle(data.reshape(shape or (1,)), element)
    return tl.tensor(handle, tl.core.block_type(element, list(shape)) if shape else element)


def _outcome(operation, lhs, rhs):
    """What an operation gives: its type and bits, or the error it raises."""
    try:
        out = operation(lhs, rhs)
    except Exception as error:  # noqa: BLE001 - whichever Triton raises, compared as text
        return type(error).__name__, str(error)
    return str(out.type), out.handle.dtype, out.handle.data.dtype, out.handle.data.shape, \
        out.handle.data.tobytes()


def test_type_checks_decided_once_per_types_give_triton_s_bits_and_errors(shipped_interpreter,
                                                                          monkeypatch):
    """Binary operations of every pair of element types, of tensors of one shape, broadcast
    or not, and of a tensor and a Python number, give Triton's type, bits and errors
    with the type check decided once per pair of types: at its first operation of a pair
    and at a later one."""
    from triton.language.semantic import TritonSemantic
    interpreter_device.install()
    semantic = interpreter.interpreter_semantic
    decided = TritonSemantic.binary_op_type_checking_impl
    nan = tl.PropagateNan.NONE
    operations = [lambda x, y: semantic.add(x, y, False), lambda x, y: semantic.sub(x, y, False),
                  lambda x, y: semantic.mul(x, y, False), semantic.truediv, semantic.floordiv,
                  semantic.mod, lambda x, y: semantic.fdiv(x, y, False),
                  lambda x, y: semantic.maximum(x, y, nan), semantic.less_than, semantic.equal,
                  semantic.and_, semantic.xor_, semantic.shl]

    def shipped(operation, lhs, rhs):
        with monkeypatch.context() as patched:
            patched.setattr(TritonSemantic, "binary_op_type_checking_impl", decided.shipped)
            return _outcome(operation, lhs, rhs)

    cases = []
    for i, (lhs, rhs) in enumerate(itertools.product(_ELEMENTS, repeat=2)):
        for j, operation in enumerate(operations):
            lhs_shape, rhs_shape = _SHAPES[(i + j) % len(_SHAPES)]
            cases.append((operation, _operand(*lhs, lhs_shape), _operand(*rhs, rhs_shape)))
    for i, (element, number) in enumerate(itertools.product(_ELEMENTS, _NUMBERS)):
        operation, tensor = operations[i % len(operations)], _operand(*element, (4,))
        cases += [(operation, tensor, number), (operation, number, tensor)]
    for operation, lhs, rhs in cases:
        expected = shipped(operation, lhs, rhs)
        assert _outcome(operation, lhs, rhs) == expected  # decided here, or earlier
        assert _outcome(operation, lhs, rhs) == expected  # decided
    # and a pair that casts nothing was decided: Triton's computation type is not asked again
    mul, block, scalar = operations[2], _operand(tl.float32, np.float32, (4,)), \
        _operand(tl.float32, np.float32, ())
    expected = shipped(mul, block, scalar)
    monkeypatch.setattr(TritonSemantic, "computation_type_impl", None)
    assert _outcome(mul, block, scalar) == expected


def test_with_debug_on_the_overflow_checks_stay(shipped_interpreter):
    builder = interpreter.interpreter_builder
    builder.options = dataclasses.replace(builder.options, debug=True)
    interpreter_device.install()
    assert builder.options.sanitize_overflow


REDUCTIONS = '''
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
if sys.argv[2] == "installed":
    from kdiff.sandbox import interpreter_device
    interpreter_device.install()


@triton.jit
def row_norm(x):  # a device function of the file's own, beside the standard library's
    return tl.sqrt(tl.sum(x * x, axis=0))


@triton.jit
def reductions(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    y = tl.cumsum(x, axis=0) + tl.max(x, axis=0) - tl.min(x, axis=0) * row_norm(x)
    y = y + tl.argmax(x, axis=0).to(tl.float32) + tl.sum(x, axis=0)
    tl.store(out_ptr + row * n + offs, y, mask=offs < n)


def run():
    x = torch.randn(64, 24, generator=torch.Generator().manual_seed(1))
    out = torch.empty_like(x)
    reductions[(64,)](x, out, 24, BLOCK=32)
    return out


outs = [run()]
try:  # a launch that fails ends its patches too
    reductions[(1,)](torch.randn(4), None, 4, BLOCK=4)
except Exception:
    pass
outs.append(run())
torch.save(outs, sys.argv[1])
'''


def test_device_functions_patch_once_a_launch_with_the_same_bits(tmp_path):
    """In a fresh process each way: a launch's first device calls find nothing patched."""
    import subprocess
    import sys
    script = tmp_path / "reductions.py"
    script.write_text(REDUCTIONS)
    outs = {}
    for how in ("shipped", "installed"):
        subprocess.run([sys.executable, str(script), str(tmp_path / how), how], check=True,
                       timeout=300)
        outs[how] = torch.load(tmp_path / how)
    for a, b in zip(outs["shipped"] * 2, outs["installed"] + outs["installed"][::-1]):
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 8})],
                 key=["n"])
@triton.jit
def _tuned_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_an_autotuned_kernel_runs_its_first_configuration(shipped_interpreter):
    """No benchmarker on the CPU: as shipped, tuning raises; installed, the configurations
    count as equally fast and the first runs, every time."""
    x = torch.randn(100)
    out = torch.zeros(100)
    grid = lambda meta: (triton.cdiv(100, meta["BLOCK"]),)  # noqa: E731
    if not torch.cuda.is_available():  # a GPU's benchmarker would time interpreted runs
        with pytest.raises(RuntimeError, match="active drivers"):
            _tuned_copy[grid](x, out, 100)
    interpreter_device.install()
    _tuned_copy[grid](x, out, 100)
    assert torch.equal(out, x)
    assert _tuned_copy.best_config.kwargs == {"BLOCK": 32}


def test_the_cpu_device_answers_a_compute_capability(shipped_interpreter, monkeypatch):
    """Libraries ask it when imported (attorch, to choose TF32); torch without CUDA raises.
    Interpreted, the kernels stand for an sm_90 GPU's; CUDA itself stays unavailable."""
    if torch.cuda.is_available():
        pytest.skip("a GPU answers for itself")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        torch.cuda.get_device_capability()
    interpreter_device.install()
    assert torch.cuda.get_device_capability() == (9, 0)
    assert torch.cuda.get_device_capability(0) == (9, 0)
    assert not torch.cuda.is_available()


def test_the_cpu_device_answers_its_properties(shipped_interpreter, monkeypatch):
    """flash-attention's layer norm reads `get_device_properties(current_device()).warp_size`
    when imported; torch without CUDA raises at both. Interpreted, the kernels stand for an
    sm_90 GPU's, whose properties agree with its compute capability; CUDA stays unavailable."""
    if torch.cuda.is_available():
        pytest.skip("a GPU answers for itself")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        torch.cuda.get_device_properties(torch.cuda.current_device())
    interpreter_device.install()
    properties = torch.cuda.get_device_properties(torch.cuda.current_device())
    assert (properties.major, properties.minor) == torch.cuda.get_device_capability()
    assert properties.warp_size == 32 and properties.multi_processor_count == 132
    assert not torch.cuda.is_available()


def test_triton_runs_for_libraries_and_not_for_torch_on_the_cpu_device(shipped_interpreter,
                                                                       monkeypatch):
    """torchao defines its Triton kernels under `if has_triton():`, which torch without CUDA
    answers False. Interpreted, the kernels stand for an sm_90 GPU's, where it is True; torch's
    own callers (inductor, dynamo) keep the answer for the device this process has."""
    if torch.cuda.is_available():
        pytest.skip("a GPU answers for itself")
    import torch.utils._triton as torch_triton
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    shipped = torch_triton.has_triton()
    interpreter_device.install()
    assert torch_triton.has_triton() is True
    as_torch = {"__name__": "torch._inductor.utils", "has_triton": torch_triton.has_triton}
    assert eval("has_triton()", as_torch) is shipped


def test_the_current_accelerator_is_cuda_for_libraries_and_not_for_torch(shipped_interpreter,
                                                                         monkeypatch):
    """bitsandbytes chooses its device module by `torch.accelerator.current_accelerator()`,
    None on a CPU-only torch; the GPU the interpreted kernels stand for answers cuda. torch's
    own callers keep the answer for the device this process has."""
    if torch.cuda.is_available():
        pytest.skip("a GPU answers for itself")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert torch.accelerator.current_accelerator() is None
    interpreter_device.install()
    assert torch.accelerator.current_accelerator() == torch.device("cuda")
    as_torch = {"__name__": "torch.amp.autocast_mode", "torch": torch}
    assert eval("torch.accelerator.current_accelerator()", as_torch) is None


@triton.jit
def _atomic_add_into(Y, X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(Y + offs % 4, tl.load(X + offs))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_atomic_adds_into_16_bit_floats_round_as_a_gpu_s(shipped_interpreter, dtype):
    """A GPU's fp16 and bf16 atomic add rounds to nearest even, +-inf past the range, and
    applies a block's adds to one address one after another. The interpreter's fp16 add
    raised at an overflow ("overflow to signed inf") and its bf16 add refused the type."""
    interpreter_device.install()
    y = torch.tensor([60000.0, 1.0, -60000.0, 0.0]).to(dtype)
    x = torch.tensor([60000.0, 2.0, -60000.0, 0.1] * 2).to(dtype)
    _atomic_add_into[(1,)](y, x, BLOCK=8)
    expected = torch.tensor([60000.0, 1.0, -60000.0, 0.0]).to(dtype)
    for half in (x[:4], x[4:]):
        expected = expected + half  # torch's fp16 and bf16 adds round once, to nearest even
    assert torch.equal(y, expected), (y, expected)
    assert bool(torch.isinf(y[[0, 2]]).all()) is (dtype == torch.float16)


def test_triton_s_driver_answers_for_the_cpu_device(shipped_interpreter, monkeypatch):
    """Autotuners of the `triton.ops.matmul` lineage prune configs by
    `driver.active.utils.get_device_properties(dev)["max_shared_mem"]`; without a GPU Triton
    has no driver and raised. The stand-in answers as the sm_90 GPU the kernels stand for."""
    if torch.cuda.is_available():
        pytest.skip("a GPU answers for itself")
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    driver._active = None
    with pytest.raises(RuntimeError, match="active drivers"):
        driver.active  # noqa: B018
    interpreter_device.install()
    assert driver.active.get_current_target() == GPUTarget("cuda", 90, 32)
    gpu = driver.active.utils.get_device_properties(driver.active.get_current_device())
    assert gpu["max_shared_mem"] == torch.cuda.get_device_properties(0).shared_memory_per_block_optin
    assert "sm_clock_rate" not in gpu  # not known here


@triton.jit
def _atomic_row_sum(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.atomic_add(out_ptr + tl.program_id(0), tl.sum(x, axis=0))


def _atomic_sums(calls: int, kernel=_atomic_row_sum, *extra) -> list[torch.Tensor]:
    x = torch.randn(4, 4096, generator=torch.Generator().manual_seed(2)) * \
        torch.logspace(-3, 3, 4096)  # magnitudes that make fp32 addition's order show
    outs = []
    for _ in range(calls):
        out = torch.zeros(4)
        kernel[(4, 64)](x, out, 4096, *extra, BLOCK=64)
        outs.append(out)
    return outs


def test_a_launch_s_programs_run_in_a_drawn_order(shipped_interpreter):
    """As a GPU schedules them: atomics combine partials in another order each call."""
    shipped = _atomic_sums(3)
    assert all(torch.equal(shipped[0], o) for o in shipped[1:])  # index order every time
    interpreter_device.install()
    drawn = _atomic_sums(5)
    assert not all(torch.equal(drawn[0], o) for o in drawn[1:])
    torch.testing.assert_close(drawn[0], shipped[0])


@triton.jit
def _atomic_row_sum_said_to_wait(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    # while tl.atomic_add(flags, 0) == 0: words of a spin, in a comment
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.atomic_add(out_ptr + tl.program_id(0), tl.sum(x, axis=0))


@triton.jit
def _atomic_row_sum_with_a_dead_loop(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    while tl.program_id(0) < 0:  # false at once, in any order
        tl.atomic_add(out_ptr, 0.0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.atomic_add(out_ptr + tl.program_id(0), tl.sum(x, axis=0))


@triton.jit
def _atomic_row_sum_with_a_long_loop(x_ptr, out_ptr, n_cols, turns, BLOCK: tl.constexpr):
    j = tl.program_id(0) * 0
    while j < turns:  # as long in any order: past the cap, to ask for index order
        j += 1
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.atomic_add(out_ptr + tl.program_id(0), tl.sum(x, axis=0))


@pytest.mark.parametrize("kernel, extra", [
    (_atomic_row_sum_said_to_wait, ()),
    (_atomic_row_sum_with_a_dead_loop, ()),
    (_atomic_row_sum_with_a_long_loop, (9,)),
], ids=["words", "dead_loop", "long_loop"])
def test_a_kernel_that_does_not_wait_cannot_keep_index_order(shipped_interpreter, monkeypatch,
                                                            kernel, extra):
    """Index order is kept for a program that waits on another, found by what the programs
    do: not by a spin's words in a comment, nor by a loop that ends at once or is as long in
    index order (a lower cap: the same path, fewer turns)."""
    monkeypatch.setattr(interpreter_order, "WAIT_CAP", 4)
    shipped = _atomic_sums(1, kernel, *extra)
    interpreter_device.install()
    drawn = _atomic_sums(4, kernel, *extra)
    assert not all(torch.equal(drawn[0], o) for o in drawn[1:])
    for out in drawn:
        torch.testing.assert_close(out, shipped[0])


def _run_script(tmp_path, name: str, text: str) -> None:
    """In a process of its own, where a launch that never ends fails on the timeout."""
    import subprocess
    import sys
    script = tmp_path / f"{name}.py"
    script.write_text(text)
    subprocess.run([sys.executable, str(script)], check=True, timeout=60)


WAITS_FOR_THE_PROGRAM_BEFORE = '''
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
from kdiff.sandbox import interpreter_device
interpreter_device.install()


@triton.jit
def chained(flags, out):
    i = tl.program_id(0)
    if i > 0:
        while tl.atomic_add(flags + i - 1, 0) == 0:
            pass
    tl.store(out + i, i)
    tl.atomic_xchg(flags + i, 1)


flags, out = torch.zeros(64, dtype=torch.int32), torch.zeros(64, dtype=torch.int32)
chained[(64,)](flags, out)
assert out.tolist() == list(range(64))
'''


def test_a_kernel_that_waits_for_other_programs_keeps_its_order(tmp_path):
    """One program at a time, a spin on another program's flag ends only if that program ran
    first: drawn, this launch would never end."""
    _run_script(tmp_path, "chained", WAITS_FOR_THE_PROGRAM_BEFORE)


WAITS_AND_ADDS = '''
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
from kdiff.sandbox import interpreter_device
interpreter_device.install()


@triton.jit
def chained_sum(x, flags, count, total):
    i = tl.program_id(0)
    tl.atomic_add(count, 1)
    tl.atomic_add(total, tl.load(x + i))
    if i > 0:
        while tl.atomic_add(flags + i - 1, 0) == 0:
            pass
    tl.atomic_xchg(flags + i, 1)


x = torch.arange(64, dtype=torch.float32) * 0.5
flags, count = torch.zeros(64, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
total = torch.zeros(1)
chained_sum[(64,)](x, flags, count, total)
assert count.item() == 64, count  # once a program: the stopped run's additions undone
assert total.item() == x.sum().item(), total
assert flags.tolist() == [1] * 64
'''


def test_a_launch_stopped_for_waiting_runs_again_from_its_memory_before(tmp_path):
    """The drawn run of a spinning kernel is stopped part way, after some of its programs
    added: its arguments are put back as they were before it runs again."""
    _run_script(tmp_path, "waits_and_adds", WAITS_AND_ADDS)


# The same chain, its spin inside a jit function the kernel calls.
WAITS_IN_A_DEVICE_FUNCTION = WAITS_FOR_THE_PROGRAM_BEFORE.replace(
    "        while tl.atomic_add(flags + i - 1, 0) == 0:\n            pass\n",
    "        wait_for(flags + i - 1)\n").replace(
    "@triton.jit\ndef chained",
    "@triton.jit\ndef wait_for(flag):\n    while tl.atomic_add(flag, 0) == 0:\n        pass\n\n\n"
    "@triton.jit\ndef chained")


def test_a_spin_in_a_device_function_the_kernel_calls_is_found(tmp_path):
    _run_script(tmp_path, "waits_in_a_device_function", WAITS_IN_A_DEVICE_FUNCTION)


@triton.jit
def _bf16_ops(x_ptr, y_ptr, out_ptr, sums_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.where(x > y, x * y + x, tl.abs(y) / y - x)
    tl.store(out_ptr + offs, z)
    tl.store(sums_ptr, tl.sum(x, axis=0))
    tl.store(sums_ptr + 1 + offs, tl.cumsum(x, axis=0))


def _pairwise_sum(x: torch.Tensor) -> torch.Tensor:
    while x.numel() > 1:
        x = x[0::2] + x[1::2]  # torch's bf16 (fp16) add: computed in fp32, rounded to bf16 (fp16)
    return x[0]


def test_bf16_arithmetic_on_values_not_bit_patterns(shipped_interpreter):
    """As shipped the interpreter multiplies bf16's uint16 bit patterns as integers."""
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(64, generator=gen).bfloat16()
    y = torch.randn(64, generator=gen).bfloat16()
    out, sums = torch.empty(64, dtype=torch.bfloat16), torch.empty(65, dtype=torch.bfloat16)
    # Triton's types: bf16 * and + stay bf16, each rounded; a division computes in fp32
    expected = torch.where(x > y, (x * y + x).float(),
                           y.abs().float() / y.float() - x.float()).bfloat16()
    _bf16_ops[(1,)](x, y, out, sums, BLOCK=64)
    assert not torch.equal(out, expected)
    interpreter_device.install()
    _bf16_ops[(1,)](x, y, out, sums, BLOCK=64)
    assert torch.equal(out, expected)
    assert torch.equal(sums[0], _pairwise_sum(x))  # a tree, each partial rounded
    running = x.clone()
    for i in range(1, 64):
        running[i] = running[i - 1] + x[i]
    assert torch.equal(sums[1:], running)


@triton.jit
def _fp16_sum(x_ptr, sum_ptr, BLOCK: tl.constexpr):
    tl.store(sum_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0))


def test_fp16_sums_round_each_partial_as_a_gpu_does(shipped_interpreter):
    """np.sum of fp16 adds in fp32 and rounds once; a GPU's fp16 reduction rounds each
    partial to fp16, so the interpreter as shipped hid a kernel accumulating in fp16."""
    x = torch.tensor([2048.0] + [1.0] * 7).half()  # 2048 + 1 is a tie in fp16: 2048
    out = torch.empty(1, dtype=torch.float16)
    _fp16_sum[(1,)](x, out, BLOCK=8)
    assert out.item() == 2056.0  # 2055 in fp32, rounded once
    interpreter_device.install()
    _fp16_sum[(1,)](x, out, BLOCK=8)
    assert out.item() == 2054.0  # (2048 + 1) + (1 + 1) + ((1 + 1) + (1 + 1)), in fp16
    gen = torch.Generator().manual_seed(6)
    x = torch.rand(256, generator=gen).half() * 100
    _fp16_sum[(1,)](x, out, BLOCK=256)
    assert torch.equal(out[0], _pairwise_sum(x))  # torch's fp16 adds: one rounding each


@triton.jit
def _to_bf16(x_ptr, d_ptr, nearest_ptr, rtz_ptr, from_fp64_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(nearest_ptr + offs, x)  # the store's cast
    tl.store(rtz_ptr + offs, x.to(tl.bfloat16, fp_downcast_rounding="rtz"))
    d = tl.load(d_ptr + offs)
    tl.store(from_fp64_ptr + offs, d)
    tl.store(from_fp64_ptr + BLOCK + offs, d.to(tl.bfloat16, fp_downcast_rounding="rtz"))


def test_fp32_and_fp64_round_to_bf16_to_nearest_even(shipped_interpreter):
    """As a GPU's cvt.rn.bf16.f32; the interpreter as shipped truncates."""
    interpreter_device.install()
    x = torch.randn(64, generator=torch.Generator().manual_seed(5))
    # just above the bf16 midpoint 1 + 2^-8: to fp32 first it would become the midpoint
    d = torch.full((64,), 1 + 2.0 ** -8 + 2.0 ** -40, dtype=torch.float64)
    # and, truncated, just below 1 + 2^-7: to fp32 to nearest first it would become 1 + 2^-7
    d[32:] = 1 + 2.0 ** -7 - 2.0 ** -40
    nearest, rtz = (torch.empty(64, dtype=torch.bfloat16) for _ in range(2))
    from_fp64 = torch.empty(128, dtype=torch.bfloat16)
    _to_bf16[(1,)](x, d, nearest, rtz, from_fp64, BLOCK=64)
    assert torch.equal(nearest, x.bfloat16())
    assert torch.equal(rtz.view(torch.int16), (x.view(torch.int32) >> 16).to(torch.int16))
    assert from_fp64[:32].float().unique().tolist() == [1 + 2.0 ** -7]
    assert from_fp64[32:64].float().unique().tolist() == [1 + 2.0 ** -7]  # to nearest
    assert from_fp64[96:].float().unique().tolist() == [1.0]  # toward zero


@triton.jit
def _int_to_bf16(q_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(q_ptr + offs).to(tl.bfloat16))


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int32, torch.int64])
def test_integers_convert_to_bf16_by_value(shipped_interpreter, dtype):
    """As a GPU's cvt.rn.bf16.s32 (to nearest even); the interpreter wrote the integer into
    bf16's bit pattern, so gemlite's 4-bit dequantizer (codes to bf16) read 3 as 2.8e-40."""
    interpreter_device.install()
    values = [0, 1, 3, -7, 100, 127, 255, 257, -128, 2**24 + 1, 2**31 - 1, -(2**31), 12345]
    q = torch.tensor(values + values[:3], dtype=torch.int64).to(dtype)  # wrapped; 16 of them
    out = torch.empty(16, dtype=torch.bfloat16)
    _int_to_bf16[(1,)](q, out, BLOCK=16)
    assert torch.equal(out, q.to(torch.bfloat16))


@triton.jit
def _from_bf16(x_ptr, f32_ptr, f64_ptr, f16_ptr, i32_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(f32_ptr + offs, x.to(tl.float32))
    tl.store(f64_ptr + offs, x.to(tl.float64))
    tl.store(f16_ptr + offs, x.to(tl.float16))
    tl.store(i32_ptr + offs, x.to(tl.int32))


def test_bf16_widens_exactly_subnormals_included(shipped_interpreter):
    """bf16 is fp32's upper half; the interpreter's bit-field conversion renormalised a
    subnormal bf16 as if fp32's exponent were wider (1.38e-39 came out 1.03e-38), so a
    kernel upcasting bf16 to fp32 read its subnormal inputs wrong (EXC-02 read a flush)."""
    interpreter_device.install()
    x = torch.tensor([-8.27e-40, 1.38e-39, 1.0e-38, 9.2e-41, 1.5, -3.75, 1e5, 0.0, -0.0,
                      float("inf"), float("-inf"), 3e38, 1.2e-38, -2.5e-39, 7.0, -1e-3],
                     dtype=torch.bfloat16)
    assert (x.float().abs() < torch.finfo(torch.float32).tiny).sum() == 7  # subnormals, zeros
    f32, f64 = torch.empty(16), torch.empty(16, dtype=torch.float64)
    f16, i32 = torch.empty(16, dtype=torch.float16), torch.empty(16, dtype=torch.int32)
    _from_bf16[(1,)](x, f32, f64, f16, i32, BLOCK=16)
    assert torch.equal(f32.view(torch.int32), x.float().view(torch.int32))  # signs of zeros
    assert torch.equal(f64, x.double())
    assert torch.equal(f16, x.half())
    in_range = x.float().abs() < 2**31  # a cast past int32's range is undefined
    assert torch.equal(i32[in_range], x.float()[in_range].to(torch.int32))


@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, M: tl.constexpr, PRECISION: tl.constexpr):
    r = tl.arange(0, M)
    a = tl.load(a_ptr + r[:, None] * M + r[None, :])
    b = tl.load(b_ptr + r[:, None] * M + r[None, :])
    if PRECISION == "default":
        c = tl.dot(a, b)
    else:
        c = tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + r[:, None] * M + r[None, :], c)


def _tf32_by_definition(x: torch.Tensor) -> torch.Tensor:
    """cvt.rna.tf32.f32: the magnitude rounded to 10 mantissa bits, ties away from zero."""
    m, e = torch.frexp(x.double().abs())  # |x| = m 2^e, m in [0.5, 1): 11 significant bits
    rounded = torch.floor(m * 2 ** 11 + 0.5) / 2 ** 11
    return (torch.sign(x.double()) * torch.ldexp(rounded, e)).float()


def test_a_dot_of_fp32_operands_runs_at_its_input_precision(shipped_interpreter):
    """TF32 by default on a GPU (operands rounded to 2^-11): as shipped the interpreter
    multiplied in fp32 whatever the precision, so PRC-01 could not see it on the CPU."""
    interpreter_device.install()
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(16, 16, generator=gen), torch.randn(16, 16, generator=gen)
    exact = a.double() @ b.double()
    a16, b16 = a.bfloat16(), b.bfloat16()  # bf16 operands: exact products, fp32 accumulation
    out = torch.empty(16, 16)
    _matmul[(1,)](a16, b16, out, M=16, PRECISION="default")
    assert (out.double() - a16.double() @ b16.double()).abs().max() < 1e-5
    in_tf32 = _tf32_by_definition(a).double() @ _tf32_by_definition(b).double()
    out = torch.empty(16, 16)
    for precision, want in (("default", in_tf32), ("tf32", in_tf32), ("ieee", exact),
                            ("tf32x3", exact)):
        _matmul[(1,)](a, b, out, M=16, PRECISION=precision)
        assert (out.double() - want).abs().max() < 1e-5, precision  # fp32 accumulation
    assert (out.double() - in_tf32).abs().max() > 1e-4  # the two differ visibly here


def _bf16_split(x: torch.Tensor, count: int) -> list[torch.Tensor]:
    """x as `count` bf16 parts, each the rest rounded to nearest even (as arith.truncf)."""
    parts = []
    for _ in range(count):
        parts.append(x.bfloat16().float())
        x = x - parts[-1]
    return [p.double() for p in parts]


def test_a_dot_at_bf16x3_or_bf16x6_computes_triton_s_products_of_bf16_parts(shipped_interpreter):
    """KDA's safe gate asks `input_precision="bf16x3"`: the CUDA backend allows it, the
    interpreter as shipped refused it. Installed, the products are Triton's (F32DotTC): of
    the operands' 2 (3) bf16 parts, the high parts' product and the cross terms of order
    up to 1 (2); bf16x3 errs visibly beside fp32, bf16x6 does not."""
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(16, 16, generator=gen), torch.randn(16, 16, generator=gen)
    out = torch.empty(16, 16)
    with pytest.raises(Exception, match="bf16x3"):
        _matmul[(1,)](a, b, out, M=16, PRECISION="bf16x3")
    interpreter_device.install()
    exact = a.double() @ b.double()
    (ah, am), (bh, bm) = _bf16_split(a, 2), _bf16_split(b, 2)
    want = {"bf16x3": am @ bh + ah @ bm + ah @ bh}
    (ah, am, al), (bh, bm, bl) = _bf16_split(a, 3), _bf16_split(b, 3)
    want["bf16x6"] = am @ bm + al @ bh + ah @ bl + am @ bh + ah @ bm + ah @ bh
    for precision, value in want.items():
        _matmul[(1,)](a, b, out, M=16, PRECISION=precision)
        assert (out.double() - value).abs().max() < 1e-5, precision  # fp32 accumulation
    assert (out.double() - exact).abs().max() < 1e-5  # bf16x6
    _matmul[(1,)](a, b, out, M=16, PRECISION="bf16x3")
    assert (out.double() - exact).abs().max() > 3e-5


@triton.jit
def _scaled(x_ptr, out_ptr, scale, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * scale.to(tl.float32), mask=mask)
    tl.store(out_ptr + n + offs, x * scale, mask=mask)


def test_a_float_argument_is_an_fp32_scalar_as_compiled(shipped_interpreter):
    """Compiled Triton types a float argument fp32 (`mangle_type`), so it has `.to` and an
    fp16 block times it computes in fp32; the interpreter as shipped passes a Python float."""
    from triton.runtime.jit import mangle_type
    assert mangle_type(1.5) == "fp32"
    x = torch.full((4,), 1 + 2 ** -10, dtype=torch.float16)
    out = torch.empty(8)
    with pytest.raises(Exception, match="has no attribute 'to'"):
        _scaled[(1,)](x, out, 1 + 2 ** -10, 4, BLOCK=4)
    interpreter_device.install()
    _scaled[(1,)](x, out, 1 + 2 ** -10, 4, BLOCK=4)
    # (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20: an fp32 value; rounded to fp16 it would be 1 + 2^-9
    assert out.tolist() == [1 + 2 ** -9 + 2 ** -20] * 8
    assert float(interpreter._implicit_cvt(1e300).handle.data[0]) == float("inf")


# Builtins of `tl` under names of the module's own, as unsloth's kernels bind
# `triton_cast = tl.cast` in their utils and call it in a kernel, or imported by name.
_own_cast = tl.cast
_own_exp = pytest.importorskip("triton.language.math").exp


@triton.jit
def _cast_under_own_name(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, _own_cast(x, tl.float16))
    tl.store(out_ptr + BLOCK + offs, _own_cast(_own_exp(x), tl.float16))


def test_a_builtin_under_a_module_s_own_name_runs_and_is_put_back(shipped_interpreter):
    """Compiled Triton calls the builtin a global names; the interpreter as shipped patches
    only `tl`'s attributes, so the module's own names raised. Patched for the launch, each
    name holds the builtin itself again after it."""
    x = torch.tensor([1 + 2 ** -12, -3.0, 10.3, 2 ** -25])
    out = torch.empty(8, dtype=torch.float16)
    with pytest.raises(Exception, match="Did you forget to add @triton.jit"):
        _cast_under_own_name[(1,)](x, out, BLOCK=4)
    interpreter_device.install()
    _cast_under_own_name[(1,)](x, out, BLOCK=4)
    assert torch.equal(out[:4], x.half())
    assert torch.allclose(out[4:].float(), x.exp(), rtol=2 ** -10)  # within fp16's rounding
    assert _own_cast is tl.cast and _own_exp is tl.math.exp


# A device function of one module calling a builtin under that module's own name, and a
# kernel of another module calling it.
DEVICE_FUNCTION_MODULE = """
import triton
import triton.language as tl

to_half = tl.cast


@triton.jit
def halved(x):
    return to_half(x * 0.5, tl.float16)
"""
KERNEL_MODULE = """
import triton
import triton.language as tl
from halving import halved


@triton.jit
def halve(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, halved(tl.load(x_ptr + offs)))
"""


def test_a_device_function_s_own_names_hold_the_builtin_in_every_program_and_launch(
        shipped_interpreter, tmp_path, monkeypatch):
    """Within a launch a module's globals are patched at the first call of a device function
    of it, and the later programs' calls find them patched; the launch's end puts them back,
    so the next launch patches them again."""
    (tmp_path / "halving.py").write_text(DEVICE_FUNCTION_MODULE)
    (tmp_path / "halving_kernel.py").write_text(KERNEL_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import halving
    import halving_kernel

    interpreter_device.install()
    x = torch.randn(32)
    for _ in range(2):
        out = torch.zeros(32, dtype=torch.float16)
        halving_kernel.halve[(4,)](x, out, BLOCK=8)
        assert torch.equal(out, (x * 0.5).half())
        assert halving.to_half is tl.cast


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


LOOP_INDEX = '''
import os
import sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
if sys.argv[1] == "installed":
    from kdiff.sandbox import interpreter_device
    interpreter_device.install()


@triton.jit
def widths(out, n, m):
    for i in range(n):  # int32 bounds: an int32 index
        j = i.to(tl.int64)
        tl.store(out + j, i.dtype.primitive_bitwidth * 1000 + j)
    for i in tl.range(n, m.to(tl.int64)):  # an int64 bound: an int64 index
        tl.store(out + i, i.dtype.primitive_bitwidth * 1000 + i)
    for k in tl.static_range(2):  # constexpr: unrolled, an int
        tl.store(out + m + k, k)


out = torch.zeros(10, dtype=torch.int64)
widths[(1,)](out, 4, 8)
print(out.tolist())
'''


def test_a_loop_index_is_a_tensor_of_the_compiled_type(tmp_path):
    """fla's chunk kernels write `i_t.to(tl.int64)` for `for i_t in range(NT)`: compiled, the
    index is an int32 tensor (int64 where a bound is); shipped, the interpreter's is a Python
    int and raises."""
    import subprocess
    import sys
    script = tmp_path / "loop_index.py"
    script.write_text(LOOP_INDEX)
    shipped = subprocess.run([sys.executable, str(script), "shipped"], capture_output=True,
                             text=True, timeout=120)
    assert shipped.returncode != 0 and "has no attribute 'to'" in shipped.stderr
    installed = subprocess.run([sys.executable, str(script), "installed"], capture_output=True,
                               text=True, timeout=120, check=True)
    assert installed.stdout.split("\n")[-2] == str(
        [32000, 32001, 32002, 32003, 64004, 64005, 64006, 64007, 0, 1])


@triton.jit
def _widen_fp8(x_ptr, f32_ptr, f16_ptr, bf16_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    tl.store(f32_ptr + r, x.to(tl.float32))
    tl.store(f16_ptr + r, x.to(tl.float16))
    tl.store(bf16_ptr + r, x.to(tl.bfloat16))


@pytest.mark.parametrize("fp8", [torch.float8_e4m3fn, torch.float8_e5m2,
                                 torch.float8_e4m3fnuz, torch.float8_e5m2fnuz])
def test_fp8_widens_to_its_value_nan_and_inf_kept(shipped_interpreter, fp8):
    """As a GPU's cvt from e4m3/e5m2: the interpreter as shipped moved the bit fields and
    clamped the exponent, so E4M3's NaN came out as +-480 and E5M2's Inf as +-65536 (an
    honest fp8 GEMM loading its operands as fp8 failed EXC-01 on the CPU)."""
    interpreter_device.install()
    x = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(fp8)
    outs = [torch.empty(256, dtype=d) for d in (torch.float32, torch.float16, torch.bfloat16)]
    _widen_fp8[(1,)](x, *outs, BLOCK=256)
    for out in outs:
        expected = x.to(out.dtype)
        assert torch.equal(out.isnan(), expected.isnan()), out.dtype
        assert torch.equal(out[~out.isnan()], expected[~expected.isnan()]), out.dtype


@triton.jit
def _fp8_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr):
    r = tl.arange(0, M)
    a = tl.load(a_ptr + r[:, None] * M + r[None, :])
    b = tl.load(b_ptr + r[:, None] * M + r[None, :])
    tl.store(c_ptr + r[:, None] * M + r[None, :], tl.dot(a, b))


def test_a_dot_of_fp8_operands_keeps_their_nan_and_inf(shipped_interpreter):
    """tl.dot widened fp8 operands by moving their bit fields too: a NaN in A's row 0 gave
    finite outputs; an fp32 product of the exact values is what a GPU's fp8 MMA gives."""
    interpreter_device.install()
    g = torch.Generator().manual_seed(0)
    a = torch.randn(16, 16, generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(16, 16, generator=g).to(torch.float8_e4m3fn)
    a[0, 3] = float("nan")
    c = torch.empty(16, 16)
    _fp8_dot[(1,)](a, b, c, M=16)
    expected = a.float() @ b.float()
    assert bool(c[0].isnan().all())
    assert torch.allclose(c[1:], expected[1:], rtol=1e-6, atol=1e-6)


@triton.jit
def _narrow_to_fp8(x_ptr, e4m3_ptr, e5m2_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    tl.store(e4m3_ptr + r, x.to(tl.float8e4nv))
    tl.store(e5m2_ptr + r, x.to(tl.float8e5))


def test_narrowing_to_fp8_rounds_to_nearest_even_and_saturates(shipped_interpreter):
    """As Triton's cvt.rn.satfinite.e4m3x2.f32 (and e5m2x2): the interpreter as shipped moved
    the bit fields, and 1,903 of these 16,384 values landed on another E4M3 value (833 for
    E5M2), subnormals and carries among them. Past the largest finite value (an infinity
    too) it saturates; NaN stays NaN."""
    interpreter_device.install()
    g = torch.Generator().manual_seed(0)
    x = torch.cat([torch.randn(4000, generator=g) * s for s in (1e-3, 1, 30, 300)]
                  + [torch.tensor([448.0, 464.0, 1e4, 61440.0, float("inf"), -float("inf"),
                                   float("nan")])])
    x = torch.cat([x, torch.zeros(16384 - x.numel())])
    e4m3, e5m2 = torch.empty(16384, dtype=torch.float8_e4m3fn), torch.empty(
        16384, dtype=torch.float8_e5m2)
    _narrow_to_fp8[(1,)](x, e4m3, e5m2, BLOCK=16384)
    for got, fp8 in ((e4m3, torch.float8_e4m3fn), (e5m2, torch.float8_e5m2)):
        expected = x.to(fp8).float()
        largest = torch.finfo(fp8).max
        expected = torch.where(expected.isinf(), torch.full_like(x, largest).copysign(x),
                               expected)
        got = got.float()
        assert torch.equal(got.isnan(), expected.isnan()), fp8
        assert torch.equal(got[~got.isnan()], expected[~expected.isnan()]), fp8


@triton.jit
def _sum_to_a_runtime_bound(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):  # n: an int argument, a one-element array
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def _index_as(read):
    """`_patch_lang_tensor` with the interpreter's index `read` of a scalar's one-element
    array: Triton 3.2 to 3.6 read `int(data)`, 3.7 on `int(data.squeeze())`."""
    def patch_lang_tensor(tensor, scope, _shipped=interpreter._patch_lang_tensor):
        _shipped(tensor, scope)
        scope.set_attr(tensor, "__index__", read)
    return patch_lang_tensor


def _int_of_the_array(scalar) -> int:
    return int(scalar.handle.data)


def _int_of_the_array_squeezed(scalar) -> int:
    return int(scalar.handle.data.squeeze())


def test_a_runtime_loop_bound_is_an_index_where_the_interpreter_reads_int_of_its_array(
        shipped_interpreter, monkeypatch):
    """Triton 3.6's interpreter with numpy 2.4: every kernel looping to a runtime bound raised,
    and the matmul controls were rejected by the native check on the CPU. Installed, the
    index is the one element, and the interpreter's own index (3.7's on) is left in place."""
    x = torch.arange(300, dtype=torch.float32)
    out = torch.empty(1)
    monkeypatch.setattr(interpreter, "_patch_lang_tensor", _index_as(_int_of_the_array))
    with pytest.raises(Exception, match="only 0-dimensional arrays"):
        _sum_to_a_runtime_bound[(1,)](x, out, 300, BLOCK=64)
    interpreter_device.install()
    _sum_to_a_runtime_bound[(1,)](x, out, 300, BLOCK=64)
    assert out.item() == x.sum().item()

    monkeypatch.setattr(interpreter, "_patch_lang_tensor", _index_as(_int_of_the_array_squeezed))
    interpreter_device.install()

    class Scalar:
        pass
    scope = interpreter._LangPatchScope()
    interpreter._patch_lang_tensor(Scalar, scope)
    assert Scalar.__index__ is _int_of_the_array_squeezed
    scope.restore()


@triton.jit
def _nan_dropped_and_kept(x_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    tl.store(out_ptr + r, tl.maximum(x, 0.0))
    tl.store(out_ptr + BLOCK + r, tl.minimum(x, 0.0))
    tl.store(out_ptr + 2 * BLOCK + r, tl.clamp(x, -1.0, 1.0))
    tl.store(out_ptr + 3 * BLOCK + r, tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL))


def test_max_min_and_clamp_drop_nan_as_compiled_where_the_interpreter_kept_it(
        shipped_interpreter):
    """Triton 3.6's interpreter took `tl.maximum` (maxnum: max.f32 drops a NaN operand) as
    np.maximum, which keeps it: the red team's ReLU as `tl.maximum(x, 0)` passed EXC-01 on the
    CPU. With the interpreter given 3.6's three, the NaN lanes read as compiled: 0, 0, -1;
    `propagate_nan=ALL` keeps NaN either way."""
    builder = interpreter.interpreter_builder
    builder.create_maxnumf = lambda lhs, rhs: builder.binary_op(lhs, rhs, np.maximum)
    builder.create_minnumf = lambda lhs, rhs: builder.binary_op(lhs, rhs, np.minimum)
    builder.create_clampf = lambda x, lo, hi, how: builder.ternary_op(x, lo, hi, np.clip)
    x = torch.tensor([float("nan"), -2.0, 0.5, 3.0])
    out = torch.empty(16)
    _nan_dropped_and_kept[(1,)](x, out, BLOCK=4)
    assert out[[0, 4, 8, 12]].isnan().all()  # as Triton 3.6 gave them
    interpreter_device.install()
    _nan_dropped_and_kept[(1,)](x, out, BLOCK=4)
    assert out[[0, 4, 8]].tolist() == [0.0, 0.0, -1.0] and out[12].isnan()
    assert out[[1, 2, 3, 5, 6, 7, 9, 10, 11]].tolist() == [0.0, 0.5, 3.0, -2.0, 0.0, 0.0,
                                                           -1.0, 0.5, 1.0]


@triton.jit
def _product_error(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r)
    b = tl.load(b_ptr + r)
    tl.store(out_ptr + r, tl.fma(a, b, -(a * b)))


def test_an_fma_rounds_once_where_the_interpreter_rounded_the_product(shipped_interpreter):
    """`fma(a, b, -a * b)` is the rounding error of the product, exactly, on a GPU (fma.rn);
    Triton 3.6's interpreter computed `a * b + c` in fp32 and gave 0. With the interpreter
    given 3.6's fma, the error is exact again."""
    builder = interpreter.interpreter_builder
    builder.create_fma = lambda x, y, z: interpreter.TensorHandle(x.data * y.data + z.data,
                                                                  z.dtype.scalar)
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, generator=g), torch.randn(64, generator=g)
    exact = (a.double() * b.double() - (a * b).double()).float()  # fits fp32: 48 bits
    out = torch.empty(64)
    _product_error[(1,)](a, b, out, BLOCK=64)
    assert (out == 0).all() and (exact != 0).sum() > 50  # as Triton 3.6 gave it
    interpreter_device.install()
    _product_error[(1,)](a, b, out, BLOCK=64)
    assert torch.equal(out, exact)


class _AssignedValuesUnvisited(interpreter.ASTTransformer):
    """The interpreter's transformer as Triton 3.2 to 3.8 shape it: an assignment's value
    is wrapped in `interpreter_semantic.to_tensor` without being visited."""

    def visit_Assign(self, node: ast.Assign) -> ast.Assign:
        semantic = ast.Name("interpreter_semantic", ast.Load())
        node.value = ast.Call(func=ast.Attribute(semantic, "to_tensor", ast.Load()),
                              args=[node.value, ast.Constant(False)], keywords=[])
        return node


@triton.jit
def _band_assigned(x_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    keep = x > 0 and not x >= 1
    tl.store(out_ptr + r, tl.where(keep, x, 0.0))


def test_a_boolean_operator_assigned_is_elementwise_where_assigned_values_go_unvisited(
        shipped_interpreter, monkeypatch):
    """Under Triton 3.6 `keep = x > 0 and not x >= 1` stayed Python's `and` and `not` (a
    block is true: keep was False everywhere), since its transformer does not visit an
    assignment's value: tests/test_false_rejects.py's honest band was rejected by the native
    check. Given that transformer, the assigned value is rewritten as compiled Triton takes
    it, elementwise."""
    monkeypatch.setattr(interpreter.FunctionRewriter, "ast_transformer",
                        _AssignedValuesUnvisited())
    interpreter_device.install()
    x = torch.tensor([-0.5, 0.5, 1.5, 0.25])
    out = torch.empty(4)
    _band_assigned[(1,)](x, out, BLOCK=4)
    assert out.tolist() == [0.0, 0.5, 0.0, 0.25]
