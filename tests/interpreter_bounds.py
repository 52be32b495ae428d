"""The Triton interpreter's memory accesses checked against each launch's tensors: every
address a load, store or atomic touches where its mask holds lies inside the storage of a
tensor the launch was given. What compute-sanitizer's memcheck finds on a GPU, found here on
the CPU for the kernels a test runs (an access past a tensor reads another allocation's bytes
or faults, depending on the layout the compiler chose, so a GPU run alone proves little)."""
from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np


@dataclass
class OutOfBounds:
    kernel: str
    access: str  # the interpreter builder's operation, e.g. create_masked_load
    addresses: int  # how many of the access's addresses lie outside every argument


@dataclass
class BoundsLog:
    checked: Counter = field(default_factory=Counter)  # kernel -> memory accesses checked
    violations: list[OutOfBounds] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)  # the current launch's storage
    kernel: str = "?"

    def check(self, access: str, ptrs: Any, mask: Any) -> None:
        from triton.runtime.interpreter import _get_np_dtype
        self.checked[self.kernel] += 1
        addresses = ptrs.data.astype(np.uint64)
        if mask is not None:
            addresses = addresses[np.broadcast_to(mask.data, addresses.shape)]
        if addresses.size == 0:
            return
        size = np.dtype(_get_np_dtype(ptrs.get_element_ty())).itemsize
        inside = np.zeros(addresses.shape, dtype=bool)
        for lo, hi in self.spans:
            inside |= (addresses >= lo) & (addresses + size <= hi)
        if not inside.all():
            self.violations.append(OutOfBounds(self.kernel, access, int((~inside).sum())))


# (builder method, index of its pointer argument, index of its mask argument or None), after
# `self`; Triton 3.9's InterpreterBuilder (its create_load and create_store call the masked
# forms).
ACCESSES = (("create_masked_load", 0, 1), ("create_masked_store", 0, 2),
            ("create_atomic_rmw", 1, 3), ("create_atomic_cas", 0, None),
            ("create_atomic_load", 0, 1), ("create_atomic_store", 0, 2))


@contextlib.contextmanager
def bounds_checked() -> Iterator[BoundsLog]:
    """Every interpreted launch inside the block checked; the log says what was."""
    from triton.runtime import interpreter
    log = BoundsLog()
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, replacement: Any) -> None:
        saved.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, replacement)

    executor = interpreter.GridExecutor
    init_args, call = executor._init_args_hst, executor.__call__

    def init_args_recorded(self, args_dev, kwargs):
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        log.spans = [(t.untyped_storage().data_ptr(),
                      t.untyped_storage().data_ptr() + t.untyped_storage().nbytes())
                     for t in [*args_hst, *kwargs_hst.values()] if hasattr(t, "untyped_storage")]
        return args_hst, kwargs_hst

    def call_named(self, *args, **kwargs):
        log.kernel = getattr(self.fn, "__name__", "?")
        return call(self, *args, **kwargs)

    patch(executor, "_init_args_hst", init_args_recorded)
    patch(executor, "__call__", call_named)
    builder = interpreter.InterpreterBuilder
    def checking(name: str, ptr_at: int, mask_at: int | None) -> Any:
        original = getattr(builder, name)

        def checked(self, *args, **kwargs):
            log.check(name, args[ptr_at], None if mask_at is None else args[mask_at])
            return original(self, *args, **kwargs)
        return checked

    for name, ptr_at, mask_at in ACCESSES:
        patch(builder, name, checking(name, ptr_at, mask_at))
    try:
        yield log
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)
