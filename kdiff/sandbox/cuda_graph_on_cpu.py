"""CUDA graphs on the CPU device.

Production launchers capture their launches once in a CUDA graph (`torch.cuda.CUDAGraph`,
`with torch.cuda.graph(g): out = f(static_in)`) and then, per call, copy the call's inputs
into the captured ones and `g.replay()`; a CPU-only torch refuses to make a graph ("Tried to
instantiate dummy base class CUDAGraph"), so such an honest kernel failed the native check and
every gate on the CPU alone. A GPU's graph replays the captured kernels on the same memory.
Here the work is done as it is issued (kdiff.sandbox.cuda_on_cpu), so capturing runs it and
records each step: every Triton launch (`InterpretedFunction.run`, its arguments the same
tensors) and every torch operation outside one (its outputs the captured tensors); replaying
runs the steps again in order, each torch operation's results copied into the tensors it gave
at capture, where they are not those tensors or views of their memory. An allocation is not
replayed: its memory stays the graph's, as a GPU's graph pool keeps it.
`make_graphed_callables` gives the callables as they are: a graphed callable computes what
the callable does.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

# What torch names an allocation: its memory, not a value, which replaying keeps.
_ALLOCATIONS = ("aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
                "aten::new_empty_strided")


@dataclass
class _TorchStep:
    func: Any  # an aten operator
    args: tuple
    kwargs: dict
    outputs: list[torch.Tensor]

    def replay(self) -> None:
        replayed = [t for t in tree_leaves(self.func(*self.args, **self.kwargs))
                    if isinstance(t, torch.Tensor)]
        for captured, result in zip(self.outputs, replayed):
            if result.untyped_storage().data_ptr() != captured.untyped_storage().data_ptr():
                captured.copy_(result)


class _Capture(TorchDispatchMode):
    """The steps of a capture, as they run."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[Callable[[], None]] = []
        self.launching = False  # inside a Triton launch, whose own copies are its business

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's dispatch in dynamo's disabling otherwise, which imports
        # torch._dynamo at its first call: 2.4 s of a worker's time, for nothing compiled here
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self.launching and func._schema.name not in _ALLOCATIONS:
            outputs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
            self.steps.append(_TorchStep(func, args, kwargs, outputs).replay)
        return out


# The capture under way: a process captures one graph at a time, as CUDA's
_CAPTURING: list[_Capture] = []


class CUDAGraph:
    """`torch.cuda.CUDAGraph` on the CPU device (the module docstring)."""

    def __init__(self, keep_graph: bool = False) -> None:
        self.steps: list[Callable[[], None]] = []
        self._run: Any = None

    def capture_begin(self, pool: Any = None, capture_error_mode: str = "global",
                      **kwargs: Any) -> None:
        capture = _Capture()
        interpreter = sys.modules.get("triton.runtime.interpreter")
        if interpreter is not None:
            run = self._run = interpreter.InterpretedFunction.run

            def recorded(fn, *args, **kwargs):
                capture.steps.append(lambda: run(fn, *args, **kwargs))
                capture.launching = True
                try:
                    return run(fn, *args, **kwargs)
                finally:
                    capture.launching = False

            interpreter.InterpretedFunction.run = recorded
        _CAPTURING.append(capture)
        capture.__enter__()

    def capture_end(self) -> None:
        capture = _CAPTURING.pop()
        capture.__exit__(None, None, None)
        if self._run is not None:
            sys.modules["triton.runtime.interpreter"].InterpretedFunction.run = self._run
        self.steps = capture.steps

    def replay(self) -> None:
        for step in self.steps:
            step()

    def reset(self) -> None:
        self.steps = []

    def pool(self) -> tuple[int, int]:
        return (0, 0)


class Graph:
    """`torch.cuda.graph(g)`: captures into `g` inside the block (torch's own asks the CUDA
    host allocator to free its cache first, which a CPU-only torch lacks)."""

    def __init__(self, cuda_graph: CUDAGraph, pool: Any = None, stream: Any = None,
                 capture_error_mode: str = "global", **kwargs: Any) -> None:
        self.cuda_graph = cuda_graph

    def __enter__(self) -> None:
        self.cuda_graph.capture_begin()

    def __exit__(self, *exc: object) -> None:
        self.cuda_graph.capture_end()


def make_graphed_callables(callables: Any, sample_args: Any, **kwargs: Any) -> Any:
    return callables


# torch.cuda's graph API on the CPU device
CUDA_GRAPHS: dict[str, Any] = {
    "CUDAGraph": CUDAGraph,
    "graph": Graph,
    "graph_pool_handle": lambda: (0, 0),
    "is_current_stream_capturing": lambda: bool(_CAPTURING),
    "make_graphed_callables": make_graphed_callables,
}
