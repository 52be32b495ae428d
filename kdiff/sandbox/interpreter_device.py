"""The Triton interpreter as the worker's CPU device, without the work whose result it drops.

A candidate's Triton kernel runs on the CPU through Triton's interpreter, and most of a CPU
judging's time is spent there (the default job: 33 of 55 CPU seconds). A third of that time
went to the overflow sanitiser: with `sanitize_overflow` set (the interpreter's default), every
integer add, sub and mul is computed again in int64 and compared against the type's range, to
feed a `device_assert` that does nothing unless `debug` is set, which the interpreter never
sets (it has no switch for it). The worker (and TritonBench's script runner) switches the
sanitiser off where `debug` is off, which changes nothing a kernel can observe.

Where the interpreter does not have the shape this reads (another Triton version), nothing is
changed. tests/test_interpreter_device.py runs a kernel both ways and compares it bit for bit.
"""
from __future__ import annotations

import dataclasses


def install() -> None:
    """Switch the sanitiser off in this process's interpreter; a no-op without Triton."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    builder = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if options is None or not dataclasses.is_dataclass(options):
        return
    if getattr(options, "debug", True) or not getattr(options, "sanitize_overflow", False):
        return  # with debug on the checks assert: they stay
    builder.options = dataclasses.replace(options, sanitize_overflow=False)
