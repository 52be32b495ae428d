"""Running TritonBench code, written for a CUDA device, on a machine without one.

TritonBench's tests and wrappers put their tensors on `device='cuda'` (by keyword, `.cuda()`,
`.to('cuda')`), assert `x.is_cuda`, and call `torch.cuda` helpers. Inside `cuda_on_cpu()`
these run on the CPU as in a candidate's worker on the CPU device, with the same answers
(kdiff.sandbox.cuda_on_cpu: streams, events, NVTX, the random state, CUDA graphs, autocast),
and the `torch.cuda` device guards become no-ops; Triton kernels then run through the
interpreter (TRITON_INTERPRET=1, set by whoever starts the process), with two differences
from the device launcher smoothed over: `triton.autotune` takes its first (unpruned) config
instead of timing them all, since there is no device to time on (any config computes the same
function: the autotuner only picks the fastest), and a launch grid given as a list, which the
device launcher accepts and the interpreter does not, is taken as the tuple it means. Anything
else that needs a real device (device properties, the allocator's settings) still raises, and
the case says so. With a CUDA device present, none of this is installed.
"""
from __future__ import annotations

import contextlib
import importlib.util
from typing import Any, Iterator

import torch

from kdiff.sandbox.cuda_on_cpu import gpu_answered_on_the_cpu


class _NoDevice:
    """Stands in for `torch.cuda.device(...)` / `_DeviceGuard(...)`: nothing to switch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> "_NoDevice":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


# torch.cuda's device guards, which a candidate's worker answers in
# kdiff.sandbox.interpreter_device: nothing to switch on the CPU.
_CUDA_SHIMS: dict[str, Any] = {
    "current_device": lambda: 0,
    "device": _NoDevice,
    "_DeviceGuard": _NoDevice,
}


def _equal_timings(kernel_call: Any, quantiles: tuple[float, ...]) -> list[float]:
    """The autotuner's benchmarker without a device: every config times the same, so the
    autotuner keeps the first."""
    return [0.0] * len(quantiles)


def _tuple_grid(grid: Any) -> Any:
    if callable(grid):
        return lambda meta: tuple(grid(meta))
    return tuple(grid)


@contextlib.contextmanager
def _triton_on_cpu() -> Iterator[None]:
    if importlib.util.find_spec("triton") is None:
        yield
        return
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.interpreter import GridExecutor
    saved_bench, saved_init = Autotuner.__dict__["do_bench"], GridExecutor.__init__

    def init(self: Any, fn: Any, arg_names: Any, grid: Any, *rest: Any, **kw: Any) -> None:
        saved_init(self, fn, arg_names, _tuple_grid(grid), *rest, **kw)

    Autotuner.do_bench = property(lambda self: _equal_timings)
    GridExecutor.__init__ = init
    try:
        yield
    finally:
        Autotuner.do_bench = saved_bench
        GridExecutor.__init__ = saved_init


@contextlib.contextmanager
def cuda_on_cpu() -> Iterator[None]:
    """CUDA-device code runs on the CPU inside this block; a no-op where CUDA exists."""
    if torch.cuda.is_available():
        yield
        return
    saved = {name: getattr(torch.cuda, name) for name in _CUDA_SHIMS}
    for name, shim in _CUDA_SHIMS.items():
        setattr(torch.cuda, name, shim)
    try:
        with gpu_answered_on_the_cpu(), _triton_on_cpu():
            yield
    finally:
        for name, original in saved.items():
            setattr(torch.cuda, name, original)
