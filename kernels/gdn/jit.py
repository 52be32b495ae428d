"""`shape_jit`: the kernels' decorator in place of `triton.jit`, so that odd sizes share builds.

Triton's JIT specialises every integer argument on being 1 and on being divisible by 16, and
compiles the kernel again for each pattern it meets. The held-out sizes of kdiff's CMP-03 (1,
primes, 17, 127 for each of H, K and V) reached about eleven builds per kernel (patterns times
tile widths, counted on the CPU), each an fp32 compile of seconds on sm_90. With the builds
below, CMP-03 on GDN problem 1 compiled 53 builds in 135 s of its 331 s on the H200
(kernels/gdn/NOTES.md). So each kernel is built twice from one source:

- `aligned`, for K and V multiples of 16 (every real model's head dimensions): K and V keep
  their specialisation, whose divisibility hints let tile loads go 16 bytes wide;
- `generic`, for any other K or V: no integer specialisation at all, one build per tile shape.

H is specialised in neither: it only multiplies row offsets whose alignment K already gives.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

import triton

ALIGNMENT = 16  # what Triton's divisibility specialisation tests
SHAPE_ARGS = ("H", "K", "V")


class ShapeKernel:
    """A kernel launched as `kernel[grid](...)`, like a JITFunction, dispatching on K and V.
    `fn` is the aligned build: what kdiff's resource gate looks a kernel up by."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        names = list(inspect.signature(fn).parameters)
        shape_args = [n for n in SHAPE_ARGS if n in names]
        self.aligned = triton.jit(fn, do_not_specialize=[n for n in shape_args if n == "H"])
        self.generic = triton.jit(fn, do_not_specialize=shape_args)
        self.fn = self.aligned
        self._sizes = [(n, names.index(n)) for n in shape_args if n != "H"]
        self.__doc__, self.__name__ = fn.__doc__, fn.__name__

    def build_for(self, args: tuple, kwargs: dict) -> Any:
        sizes = [args[i] if i < len(args) else kwargs[n] for n, i in self._sizes]
        return self.aligned if all(s % ALIGNMENT == 0 for s in sizes) else self.generic

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        def launch(*args: Any, **kwargs: Any) -> Any:
            return self.build_for(args, kwargs)[grid](*args, **kwargs)
        return launch


def shape_jit(fn: Callable[..., Any]) -> ShapeKernel:
    return ShapeKernel(fn)
