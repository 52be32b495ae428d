"""Provenance, recorded in the candidate's worker: which kernels ran during the candidate's
calls, as the worker saw them.

While the candidate runs (its forward, and the gradients of a backward problem; never the
reference the benchmark's loop runs first), the recorder counts
- Triton launches, by the kernel's file and qualified name (the interpreter's launch path on
  the CPU, the JIT's on CUDA);
- calls into extension modules built with `torch.utils.cpp_extension` (`load`, `load_inline`),
  by the module's file and the function's name;
- aten operators, through a TorchDispatchMode in the calling thread and one in every Python
  thread started after `install` (by `threading` or `_thread` directly), in the order they ran (one sequence per call, to compare
  with the reference's), leaving out those that compute nothing (SETUP: views,
  allocations, constant fills) and those the Triton interpreter issues inside a launch;
- on CUDA, every device activity of the torch profiler (kineto): name, launches, device
  time, and what was still running once the current stream had finished (work left on
  another stream: the benchmark's timer, which waits on its own stream, never sees it);
  activity while Triton's autotuner benchmarks configurations (its timed runs, the fills
  that clear the L2 cache between them, a pre-hook's work) in a table of its own;
- Python threads the call started that are still running when it returns.

Nothing here attributes or decides: the judge (kdiff.verdicts.provenance) attributes each
kernel from its own reading of the candidate's files, and reads this record with
`RecordedProvenance.parse`, which bounds its size and checks every field's type. The record
is the worker's word: a candidate that patches this module can only misreport itself.
"""
from __future__ import annotations

import _thread
import contextlib
import functools
import math
import threading
import weakref
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator

import torch

from kdiff.data.dispatch import EagerDispatchMode

# Bounds on what one record holds, so that a reply stays small whatever the candidate runs:
# distinct entries per table, ops per sequence, distinct sequences, characters per name.
MAX_ENTRIES = 128
MAX_SEQUENCE = 512
MAX_SEQUENCES = 8
MAX_NAME = 240

# aten operators that compute nothing from their inputs: allocations, constant fills and
# metadata. Views (schemas whose result aliases an input without writing it) are found from
# the schema itself (`is_setup`).
SETUP_OPS = frozenset({
    "aten.empty.memory_format", "aten.empty_like.default", "aten.empty_strided.default",
    "aten.new_empty.default", "aten.new_empty_strided.default", "aten.set_.source_Storage",
    "aten.set_.source_Storage_storage_offset", "aten.zeros.default", "aten.zeros_like.default",
    "aten.new_zeros.default", "aten.ones.default", "aten.ones_like.default",
    "aten.new_ones.default", "aten.full.default", "aten.full_like.default",
    "aten.new_full.default", "aten.fill_.Scalar", "aten.zero_.default",
    "aten.lift_fresh.default", "aten._local_scalar_dense.default", "aten.resize_.default",
    "aten.record_stream.default",
})


@functools.lru_cache(maxsize=None)
def is_setup(op: torch._ops.OpOverload) -> bool:
    """An operator that launches no work on the inputs: SETUP_OPS, or a view (its result
    aliases an input and nothing is written)."""
    if str(op) in SETUP_OPS or op.namespace == "profiler":  # record_function's annotations
        return True
    returns = op._schema.returns
    return bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write
                                 for r in returns)


class OpTrace(EagerDispatchMode):
    """The operators that compute (not `is_setup`), in order, while `paused()` is 0: into
    `ops`, or handed to `sink` (another thread's trace, which dispatch modes are per thread)."""

    def __init__(self, paused: Callable[[], bool] = lambda: False,
                 sink: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.ops: list[str] = []
        self.paused = paused
        self.sink = sink or self.ops.append

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """Dynamo compiles and runs compiled code under this mode as without it (otherwise it
        falls back to eager, and the candidate judged would not be the one the benchmark
        runs). Inductor's generated code then dispatches no aten operator: on the CPU its C++
        kernels are not seen, on CUDA its Triton kernels are device kernels of a library's."""
        return True

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        if not self.paused() and not is_setup(func):
            self.sink(str(func))
        return func(*args, **(kwargs or {}))


def traced_ops(fn: Callable[[], Any]) -> list[str]:
    """The computing operators `fn()` runs, in order (the judge traces the reference so)."""
    trace = OpTrace()
    with trace:
        fn()
    return trace.ops


@dataclass
class DeviceKernel:
    """One device activity of the profiler (a kernel, a copy, a fill), summed over launches."""

    name: str
    launches: int = 0
    seconds: float = 0.0


@dataclass
class RecordedProvenance:
    """What a worker reports: the tables since the last clear, in primitives (it travels)."""

    calls: int = 0
    triton: dict[str, dict[str, int]] = field(default_factory=dict)  # file -> qualname -> n
    extensions: dict[str, dict[str, int]] = field(default_factory=dict)  # file -> fn -> n
    aten: dict[str, int] = field(default_factory=dict)  # computing operator -> count
    sequences: list[list[str]] = field(default_factory=list)  # distinct, per call
    device: list[DeviceKernel] = field(default_factory=list)  # CUDA only
    tuning: list[DeviceKernel] = field(default_factory=list)  # CUDA: the autotuner's benchmarks
    outstanding: list[str] = field(default_factory=list)  # work running at return
    dropped: int = 0  # entries left out by the bounds

    def to_reply(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def parse(cls, reply: Any) -> "RecordedProvenance":
        """The record in `reply`, each field of its type and within the bounds; ValueError
        for anything else (the worker's record is the candidate's to forge)."""
        if not isinstance(reply, dict) or set(reply) != {f for f in cls.__dataclass_fields__}:
            raise ValueError("not a provenance record")
        record = cls(calls=_count(reply["calls"]), dropped=_count(reply["dropped"]),
                     triton=_nested_counts(reply["triton"]),
                     extensions=_nested_counts(reply["extensions"]),
                     aten=_counts(reply["aten"]),
                     sequences=[_names(s, MAX_SEQUENCE) for s in
                                _bounded(reply["sequences"], MAX_SEQUENCES)],
                     outstanding=_names(reply["outstanding"], MAX_ENTRIES))
        record.device = _device_kernels(reply["device"])
        record.tuning = _device_kernels(reply["tuning"])
        return record


def _device_kernels(value: Any) -> list[DeviceKernel]:
    kernels = []
    for item in _bounded(value, MAX_ENTRIES):
        if not isinstance(item, dict) or set(item) != {"name", "launches", "seconds"}:
            raise ValueError("a device kernel not in DeviceKernel's form")
        seconds = item["seconds"]
        if type(seconds) not in (int, float) or not math.isfinite(seconds) or seconds < 0:
            raise ValueError("a device time that is not a finite, non-negative number")
        kernels.append(DeviceKernel(_name(item["name"]), _count(item["launches"]),
                                    float(seconds)))
    return kernels


def _bounded(value: Any, limit: int) -> list[Any]:
    if not isinstance(value, list) or len(value) > limit:
        raise ValueError(f"a list of at most {limit} entries expected")
    return value


def _name(value: Any) -> str:
    if not isinstance(value, str) or len(value) > MAX_NAME:
        raise ValueError(f"a name of at most {MAX_NAME} characters expected")
    return value


def _names(value: Any, limit: int) -> list[str]:
    return [_name(v) for v in _bounded(value, limit)]


def _count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise ValueError("a count that is not a non-negative integer")
    return value


def _counts(value: Any) -> dict[str, int]:
    if not isinstance(value, dict) or len(value) > MAX_ENTRIES:
        raise ValueError(f"a table of at most {MAX_ENTRIES} entries expected")
    return {_name(k): _count(v) for k, v in value.items()}


def _nested_counts(value: Any) -> dict[str, dict[str, int]]:
    if not isinstance(value, dict) or len(value) > MAX_ENTRIES:
        raise ValueError(f"a table of at most {MAX_ENTRIES} files expected")
    return {_name(k): _counts(v) for k, v in value.items()}


# -- recording (in the worker) --------------------------------------------------------------
# Where a Python thread is started: `_thread.start_new_thread` (and its alias `start_new`),
# `_thread.start_joinable_thread` where Python has it (3.13), and the references threading
# keeps to whichever of these it uses.
THREAD_STARTS = (
    (_thread, "start_new_thread"),
    (_thread, "start_new"),
    (_thread, "start_joinable_thread"),
    (threading, "_start_new_thread"),
    (threading, "_start_joinable_thread"),
)


class ProvenanceRecorder:
    """Counts what runs while the candidate runs (module docstring)."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        # Off once the judge has read the gates' calls too. Unprofiled after the native
        # check's calls: on CUDA every profiled call runs under the profiler, which costs most
        # of a gate's call, and device time is the benchmark's calls' share alone.
        self.recording = True
        self.profiling = True
        self.record = RecordedProvenance()
        self._active = False
        # Per thread, the depth of Triton launches: the interpreter's own aten ops, in the
        # thread that launched (another thread's work meanwhile is the candidate's).
        self._triton_depth = threading.local()
        # The running call's operators, to which every thread of the worker adds its own
        # (`_tracing_starts`); None outside the candidate's calls.
        self._ops: list[str] | None = None
        # The candidate's instances: the worker calls the reference's the same way (a gate's
        # timing, the benchmark's loop), and those calls are not recorded.
        self._candidates: weakref.WeakSet[Any] = weakref.WeakSet()

    def watch(self, instance: Any) -> None:
        """Record the calls of `instance`: one of the candidate's."""
        self._candidates.add(instance)

    def install(self) -> None:
        with contextlib.suppress(ImportError):  # no Triton: nothing launches a Triton kernel
            from triton.runtime import interpreter, jit
            interpreter.InterpretedFunction.run = self._counting_triton(
                interpreter.InterpretedFunction.run)
            jit.JITFunction.run = self._counting_triton(jit.JITFunction.run)
            from triton.runtime import autotuner
            autotuner.Autotuner._bench = self._marking_tuning(autotuner.Autotuner._bench)
        from torch.utils import cpp_extension
        cpp_extension.load = self._counting_extension_loader(cpp_extension.load)
        # Every name a thread starts through: `_thread`'s functions, and threading's own
        # references to them (taken when threading was imported, before this).
        for module, name in THREAD_STARTS:
            if hasattr(module, name):
                setattr(module, name, self._tracing_starts(getattr(module, name)))
        cpp_extension.load_inline = self._counting_extension_loader(cpp_extension.load_inline)

    def clear(self) -> None:
        self.record = RecordedProvenance()

    # -- what is counted --------------------------------------------------------------------
    def _add(self, table: dict[str, dict[str, int]], file: str, name: str) -> None:
        file, name = file[-MAX_NAME:], name[:MAX_NAME]
        names = table.get(file)
        if names is None and len(table) >= MAX_ENTRIES:
            self.record.dropped += 1
            return
        names = table.setdefault(file, {})
        if name not in names and len(names) >= MAX_ENTRIES:
            self.record.dropped += 1
            return
        names[name] = names.get(name, 0) + 1

    def _counting_triton(self, run: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(run)
        def counted_run(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            if not self._active or kwargs.get("warmup"):
                return run(kernel, *args, **kwargs)
            depth = self._triton_depth
            depth.n = getattr(depth, "n", 0) + 1
            try:
                launched = run(kernel, *args, **kwargs)
            finally:
                depth.n -= 1
            # Counted once it returns: a launch that raised computed none of the answer (a
            # try/except fallback to torch: tests/hostile/falls_back_when_its_kernel_raises.py)
            fn = getattr(kernel, "fn", kernel)
            code = getattr(fn, "__code__", None)
            self._add(self.record.triton, getattr(code, "co_filename", "?"),
                      getattr(fn, "__qualname__", repr(fn)))
            return launched
        return counted_run

    def _in_triton(self) -> bool:
        return getattr(self._triton_depth, "n", 0) > 0

    def _tracing_starts(self, start: Callable[..., Any]) -> Callable[..., Any]:
        """`start` (a function that starts a thread running its first argument), where every
        Python thread started after `install` (the candidate's, and a pool's it starts at
        import) runs under a trace of its own that adds to the running call's operators: a
        dispatch mode is the thread's that entered it, and work handed to a thread the call
        waits for was otherwise recorded nowhere (a Triton kernel of its own that copies,
        torch doing the rest in a thread: tests/hostile/computes_in_a_thread.py, and
        computes_in_a_raw_thread.py, whose thread no `threading.Thread` method runs)."""
        def add(op: str) -> None:
            ops = self._ops
            if ops is not None:
                ops.append(op)

        def traced_start(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            def traced(*f_args: Any, **f_kwargs: Any) -> Any:
                with OpTrace(paused=lambda: self._ops is None or self._in_triton(), sink=add):
                    return function(*f_args, **f_kwargs)
            return start(traced, *args, **kwargs)
        return traced_start

    def _marking_tuning(self, bench: Callable[..., Any]) -> Callable[..., Any]:
        """The autotuner's benchmark of one configuration, as a profiler range between two
        synchronisations: the device activity inside it is the benchmark's alone."""
        @functools.wraps(bench)
        def marked_bench(*args: Any, **kwargs: Any) -> Any:
            if not self._active or self.device != "cuda":
                return bench(*args, **kwargs)
            torch.cuda.synchronize()
            with torch.profiler.record_function(self.TUNING):
                try:
                    return bench(*args, **kwargs)
                finally:
                    torch.cuda.synchronize()
        return marked_bench

    def _counting_extension_loader(self, load: Callable[..., Any]) -> Callable[..., Any]:
        """`load`/`load_inline` whose module counts the calls of each of its functions (the
        aten operators such a function calls are counted as aten's)."""
        @functools.wraps(load)
        def loading(*args: Any, **kwargs: Any) -> Any:
            module = load(*args, **kwargs)
            file = str(getattr(module, "__file__", "?"))
            for name in dir(module):
                fn = getattr(module, name)
                if not name.startswith("_") and callable(fn) and not isinstance(fn, type):
                    setattr(module, name, self._counting_call(fn, file, name))
            return module
        return loading

    def _counting_call(self, fn: Callable[..., Any], file: str, name: str
                       ) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            result = fn(*args, **kwargs)
            if self._active:  # once it returns, as a Triton launch (`_counting_triton`)
                self._add(self.record.extensions, file, name)
            return result
        return counted

    def _add_sequence(self, ops: list[str]) -> None:
        for op in ops:
            if op in self.record.aten or len(self.record.aten) < MAX_ENTRIES:
                self.record.aten[op] = self.record.aten.get(op, 0) + 1
            else:
                self.record.dropped += 1
        sequence = [op[:MAX_NAME] for op in ops[:MAX_SEQUENCE]]
        if sequence not in self.record.sequences:
            if len(self.record.sequences) < MAX_SEQUENCES:
                self.record.sequences.append(sequence)
            else:
                self.record.dropped += 1

    # -- one stretch of the candidate's code ----------------------------------------------
    @contextlib.contextmanager
    def candidate(self, model: Any, call: bool = True) -> Iterator[None]:
        """Around code of `model`, recorded when it is a candidate's instance (`watch`): its
        forward (`call`) or its gradients."""
        if not self.recording or self._active or model not in self._candidates:
            # off, nested (counted once), or not the candidate's
            yield
            return
        threads = set(threading.enumerate())
        trace = OpTrace(paused=self._in_triton)
        profiler = self._profiler()
        self._active = True
        self._ops = trace.ops
        try:
            with contextlib.ExitStack() as stack:
                if profiler is not None:
                    stack.enter_context(profiler)
                with trace:
                    yield
                self._active = False
                if profiler is not None:  # after the trace: the marker is no candidate's op
                    self._returned()
        finally:
            self._active = False
            self._ops = None
        self.record.calls += call
        self._add_sequence(trace.ops)
        if profiler is not None:
            self._add_device(profiler)
        running = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
        if running:
            self._outstanding(f"{len(running)} thread(s) the call started still running at "
                              f"return ({', '.join(t.name for t in running[:4])})")

    def _outstanding(self, text: str) -> None:
        if text not in self.record.outstanding and len(self.record.outstanding) < MAX_ENTRIES:
            self.record.outstanding.append(text[:MAX_NAME])

    # -- CUDA: the profiler ---------------------------------------------------------------
    RETURNED = "kdiff::returned"  # the marker set once the current stream has finished
    TUNING = "kdiff::tuning"  # the range of one autotuner benchmark (`_marking_tuning`)

    def _profiler(self) -> Any:
        if not self.profiling or self.device != "cuda" or not torch.cuda.is_available():
            return None
        # autograd's profiler, which torch.profiler.profile wraps: the wrapper's first start
        # imports torch._inductor (a `hasattr(torch, "_inductor")`), 4 to 6 s of a fresh
        # worker's first recorded call on the GPU machines (benchmarks/profiler_start.py).
        from torch.autograd.profiler import profile
        return profile(use_cpu=True, use_device="cuda", use_kineto=True)

    def _returned(self) -> None:
        """The current stream finished, then a marker, then the whole device: a kernel that
        ends after the marker was running on another stream when the call returned."""
        torch.cuda.current_stream().synchronize()
        with torch.profiler.record_function(self.RETURNED):
            pass
        torch.cuda.synchronize()

    def _add_device(self, profiler: Any) -> None:
        events = profiler.kineto_results.events()
        marker = next((e.start_ns() for e in events if e.name() == self.RETURNED), None)
        tuning = [(e.start_ns(), e.end_ns()) for e in events if e.name() == self.TUNING]
        late: dict[int, int] = {}
        tables = ({k.name: k for k in self.record.device}, {k.name: k for k in self.record.tuning})
        for event in events:
            # A range (record_function) on the device's timeline is a span, not work: the
            # judge's own markers, and any the candidate names.
            if (event.device_type() != torch.autograd.DeviceType.CUDA
                    or event.is_user_annotation()):
                continue
            tuned = any(start <= event.start_ns() and event.end_ns() <= end
                        for start, end in tuning)
            kernels, table = ((self.record.tuning, tables[1]) if tuned
                              else (self.record.device, tables[0]))
            name = event.name()[:MAX_NAME]
            if name not in table:
                if len(table) >= MAX_ENTRIES:
                    self.record.dropped += 1
                    continue
                table[name] = DeviceKernel(name)
                kernels.append(table[name])
            table[name].launches += 1
            table[name].seconds += event.duration_ns() * 1e-9
            if marker is not None and event.end_ns() > marker:
                stream = event.device_resource_id()
                late[stream] = late.get(stream, 0) + 1
        for stream, n in sorted(late.items()):
            self._outstanding(f"{n} device activities still running on stream {stream} after "
                              f"the current stream had finished")

    def reply(self, clear: bool, recording: bool = True, profiling: bool = True
              ) -> dict[str, Any]:
        self.recording, self.profiling = recording, profiling
        out = self.record.to_reply()
        if clear:
            self.clear()
        return out
