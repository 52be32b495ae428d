"""The order in which Triton's interpreter runs a launch's programs, in kdiff's worker.

On a GPU the programs of a launch run side by side, in an order the scheduler picks, and it
picks another from call to call. A kernel that combines partial results with `tl.atomic_add`
therefore gets other low bits each call (fp32 addition is not associative), and ORD-02
(determinism) is there to see it. Triton's interpreter runs the programs one at a time, in
index order, every launch: on the CPU the same kernel gave the same bits each call and passed.
kdiff's worker makes each launch run its programs in an order drawn from a stream seeded once
(PROGRAM_ORDER_SEED): another order every launch, the same sequence in every judging. Programs
that do not share memory give the same bits in any order.

One kind of kernel cannot run in a drawn order one program at a time: a program that spins
until another program sets a flag (`while tl.atomic_add(flags + i - 1, 0) == 0: pass`). On a
GPU the other program runs beside it and the spin ends; in the interpreter, if the other
program comes later, it never runs and the spin never ends. Such a kernel is found by what
its programs do, not by the words of its source (a comment can say anything):
- a launch whose kernel, or a `@triton.jit` function it calls by name, has no `while` loop
  cannot spin and runs in a drawn order, with nothing else done;
- a launch that has one is watched: the memory of its tensor arguments is copied first, and
  each program's truth tests of tensors (every turn of a `while` on a tensor condition is one)
  are counted. A program that passes WAIT_CAP is taken to wait for a program that has not run:
  the launch is stopped, its memory put back, and it runs again in index order, in which the
  spin ends once the program it waits for has run before it;
- if a program in index order passes WAIT_CAP as well, its loop is long whatever the order,
  and says nothing of waiting (a kernel cannot get index order by looping long): the launch
  runs in a drawn order again, with room for twice that loop; only if a program passes that
  too does it run in index order.
A launch that waits for another program is judged in index order on the CPU, and so is what
it does after the wait (an atomic sum of partials included).
"""
from __future__ import annotations

import ast
import functools
import inspect
import operator
import random
import textwrap
from dataclasses import dataclass, field

PROGRAM_ORDER_SEED = 0

# Truth tests of tensors one program may make before it is taken to wait for a program that has
# not run. A spin on such a program never ends, and costs this many turns (a few tenths of a
# second in the interpreter) before the launch runs again; an honest loop rarely tests a tensor
# condition this often in one program, and one that does costs only a run more.
WAIT_CAP = 4096


class _WaitedTooLong(Exception):
    """A program passed its launch's cap of truth tests."""


@dataclass
class Launch:
    """A launch in progress: the language modules patched so far and the scope that undoes its
    patches, whether its programs run in a drawn order, and (when watched) the truth tests of
    tensors its programs made: the running program's, and the most of any program before it."""

    shuffled: bool
    watched: bool = False
    cap: int | None = None  # with watched: the tests a program may make; None, no limit
    patched: set[int] = field(default_factory=set)
    # ids of the module globals whose names the launch's patches have already reached
    reached: set[int] = field(default_factory=set)
    scope: object | None = None  # the patch scope the launch restores at its end
    tests: int = 0
    most: int = 0

    def next_program(self) -> None:
        self.most = max(self.most, self.tests)
        self.tests = 0

    def tested(self) -> None:
        self.tests += 1
        if self.cap is not None and self.tests > self.cap:
            raise _WaitedTooLong(f"a program made more than {self.cap} truth tests")


@dataclass
class _Snapshot:
    """The memory of a launch's tensor arguments, to put back after a stopped run (on the CPU
    the interpreter writes into the caller's tensors directly)."""

    saved: list[tuple[object, object]]  # (the storage, a copy)

    @classmethod
    def of(cls, interpreter, args: tuple, kwargs: dict) -> _Snapshot:
        unwrap = getattr(interpreter, "_unwrap_tensor", lambda t: t)
        descriptor = getattr(interpreter, "TensorDescriptor", None)
        storages: dict[int, object] = {}

        def visit(arg) -> None:
            if isinstance(arg, (tuple, list)):
                for a in arg:
                    visit(a)
            elif descriptor is not None and isinstance(arg, descriptor):
                visit(arg.base)
            elif hasattr(arg, "data_ptr"):
                storage = unwrap(arg).untyped_storage()
                storages.setdefault(storage.data_ptr(), storage)

        visit(args)
        visit(list(kwargs.values()))
        return cls([(s, s.clone()) for s in storages.values()])

    def restore(self) -> None:
        for storage, copy in self.saved:
            storage.copy_(copy)


def install(interpreter) -> list[Launch] | None:
    """The launches in progress, innermost last, kept by a wrapper of the interpreter's launch,
    and the programs of each in a drawn order (installed once); None where the interpreter has
    not the shape this reads."""
    executor = getattr(interpreter, "GridExecutor", None)
    if executor is None:
        return None
    stack = getattr(executor, "kdiff_launches", None)
    if stack is not None:
        return stack
    stack = []
    watched = _programs_in_any_order(interpreter, stack) and \
        _count_truth_tests(interpreter, stack)
    run = executor.__call__

    def attempt(self, launch: Launch, args, kwargs):
        stack.append(launch)
        try:
            return run(self, *args, **kwargs)
        finally:
            stack.pop()
            launch.next_program()

    def launch(self, *args, **kwargs):
        if not may_wait_for_programs(self.fn):
            return attempt(self, Launch(shuffled=True), args, kwargs)
        if not watched:  # no way to stop a spin: the order in which it can end
            return attempt(self, Launch(shuffled=False), args, kwargs)
        snapshot = _Snapshot.of(interpreter, args, kwargs)
        try:
            return attempt(self, Launch(shuffled=True, watched=True, cap=WAIT_CAP), args, kwargs)
        except Exception as e:
            if not _waited_too_long(e):
                raise
        snapshot.restore()
        in_order = Launch(shuffled=False, watched=True)
        result = attempt(self, in_order, args, kwargs)
        if in_order.most <= WAIT_CAP:  # the waiting depended on the order: a real spin
            return result
        snapshot.restore()
        try:
            return attempt(self, Launch(shuffled=True, watched=True,
                                        cap=2 * in_order.most + WAIT_CAP), args, kwargs)
        except Exception as e:
            if not _waited_too_long(e):
                raise
        snapshot.restore()
        return attempt(self, Launch(shuffled=False), args, kwargs)

    executor.__call__ = launch
    executor.kdiff_launches = stack
    return stack


def _waited_too_long(error: BaseException | None) -> bool:
    """Whether a launch stopped on its cap: the interpreter wraps a program's exception in an
    InterpreterError (a device function's call once more), or raises it bare when debugging."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, _WaitedTooLong):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


@functools.lru_cache(maxsize=None)
def may_wait_for_programs(fn) -> bool:
    """Whether a kernel can spin on another program: its code, or that of a `@triton.jit`
    function it names (transitively), has a `while` loop. A kernel whose source cannot be read
    is watched, which costs a copy of its memory and is right either way."""
    return _has_a_while_loop(fn, set())


def _has_a_while_loop(fn, seen: set) -> bool:
    if fn in seen:
        return False
    seen.add(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return True
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.While):
            return True
        if isinstance(node, ast.Name):
            names.add(node.id)
    scope = getattr(fn, "__globals__", {})
    called = (_jitted_function(scope.get(name)) for name in sorted(names))
    return any(_has_a_while_loop(f, seen) for f in called if f is not None)


def _jitted_function(value):
    """The Python function under a `@triton.jit` function (and an autotuner or heuristics
    around it); None for anything else."""
    try:
        from triton.runtime.jit import KernelInterface
    except ImportError:
        return None
    if not isinstance(value, KernelInterface):
        return None
    while isinstance(value, KernelInterface):
        value = getattr(value, "fn", None)
    return value if inspect.isfunction(value) else None


def _programs_in_any_order(interpreter, launches: list[Launch]) -> bool:
    """Each launch's programs in an order drawn from a stream seeded once, where its Launch
    says so; each program's start ends the count of the one before. False where the
    interpreter has no hooks for it."""
    builder = getattr(interpreter, "interpreter_builder", None)
    set_dim = getattr(builder, "set_grid_dim", None)
    set_idx = getattr(builder, "set_grid_idx", None)
    if set_dim is None or set_idx is None:
        return False
    if getattr(set_idx, "shuffles", False):
        return True
    draw = random.Random(PROGRAM_ORDER_SEED)
    order: list[int] | None = None  # the launch's programs, by the step that runs each

    def grid_dim(nx, ny, nz):
        nonlocal order
        # A grid function reads the kernel's arguments, which the interpreter hands it as
        # tensors where compiled Triton's launcher hands it ints (FlagGems' bmm:
        # `triton.cdiv(meta["M"], meta["TILE_M"])`); the interpreter's loops take them by
        # `__index__`, and so does the count of programs to order.
        nx, ny, nz = (operator.index(d) for d in (nx, ny, nz))
        set_dim(nx, ny, nz)
        n = nx * ny * nz
        order = draw.sample(range(n), n) if launches and launches[-1].shuffled and n > 1 \
            else None

    def grid_idx(x, y, z):
        if launches:
            launches[-1].next_program()
        if order is not None:
            _, ny, nz = builder.grid_dim
            i = order[(x * ny + y) * nz + z]
            x, y, z = i // (ny * nz), i // nz % ny, i % nz
        set_idx(x, y, z)

    grid_idx.shuffles = True
    builder.set_grid_dim = grid_dim
    builder.set_grid_idx = grid_idx
    return True


def _count_truth_tests(interpreter, launches: list[Launch]) -> bool:
    """In a watched launch, `bool` of a tensor (a `while` or `if` on a tensor condition) counts
    against the running program. The interpreter sets `tensor.__bool__` in each patch of the
    language, and the launch's patch scope puts the class's own back at its end; the count
    wraps whatever a patch set, after each patch of the launch, and goes with it. False where
    the interpreter has not this shape."""
    patch_lang = getattr(interpreter, "_patch_lang", None)
    if patch_lang is None:
        return False
    try:
        import triton.language as tl
    except ImportError:
        return False
    tensor = tl.core.tensor

    def patch_and_count(fn):
        scope = patch_lang(fn)
        launch = launches[-1] if launches else None
        truth = getattr(tensor, "__bool__", None)
        if launch is not None and launch.watched and truth is not None \
                and getattr(truth, "counted_for", None) is not launch:
            def counted(self):
                launch.tested()
                return truth(self)

            counted.counted_for = launch
            tensor.__bool__ = counted
        return scope

    interpreter._patch_lang = patch_and_count
    return True
