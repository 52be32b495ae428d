"""The formats a reference reads from its own tensors, answered as its working run stores them.

The oracle runs the reference on float64 copies of its inputs, so a format the reference takes
from a tensor (`torch.zeros(n, dtype=x.dtype)`, `y.to(x.dtype)`, `y.type_as(x)`, `y.to(x)`,
`y.type(x.type())`, `x.new_tensor(y)`) was float64 there, where its working run rounds to x's fp16: that rounding was neither in the
oracle's trace nor in the bound, while the same reference written `.half()` had it in both.
Inside `WorkingFormats` the reference's own code reads, for a tensor the trace keeps stored
coarser than the arithmetic, that format: its request reaches the trace as an explicit cast
does, evaluated in float64 and bounded at the format it names. Torch's, Triton's and kdiff's
own code read the tensor as it is in memory (a Triton launch types its pointers by it, the
trace its float64 values).
"""
from __future__ import annotations

import sys
from typing import Callable

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import _disable_current_modes

# packages whose reads of a tensor's dtype are about its memory, not the reference's intent
LIBRARIES = ("torch", "triton", "kdiff")


def _read_by_a_library() -> bool:
    """Whether the code that called the mode's caller (the reader of the attribute, the caller
    of the method) is one of the LIBRARIES'."""
    return sys._getframe(2).f_globals.get("__name__", "").split(".")[0] in LIBRARIES


class WorkingFormats(TorchFunctionMode):
    """Answers the reference's `x.dtype` with `stored(x)` and its `x.type()` with that
    format's tensor type name, and takes `y.to(x)`, `y.type_as(x)` and `x.new_tensor(y)` to
    that format."""

    def __init__(self, stored: Callable[[torch.Tensor], torch.dtype]) -> None:
        super().__init__()
        self.stored = stored

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__self__", None) is torch.Tensor.dtype:  # `x.dtype`'s getter
            if not _read_by_a_library():
                return self.stored(args[0])
        elif func is torch.Tensor.type and len(args) == 1 and not kwargs:  # `x.type()`
            if not _read_by_a_library():
                # the name of a tensor of that format, made where no mode sees it (the
                # oracle's trace makes every floating tensor in float64)
                with _disable_current_modes():
                    return torch.empty(0, dtype=self.stored(args[0]),
                                       device=args[0].device).type()
        elif func is torch.Tensor.new_tensor and "dtype" not in kwargs:  # `x.new_tensor(d)`
            if not _read_by_a_library():
                return func(*args, dtype=self.stored(args[0]), **kwargs)
        elif (func is torch.Tensor.type_as or func is torch.Tensor.to and len(args) > 1
              and isinstance(args[1], torch.Tensor)) and not _read_by_a_library():
            other = args[1]  # to(other, non_blocking, copy) is to(device, dtype, ...)'s
            return torch.Tensor.to(args[0], other.device, self.stored(other), *args[2:],
                                   **kwargs)
        return func(*args, **kwargs)
