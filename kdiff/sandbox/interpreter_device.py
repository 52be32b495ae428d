"""The Triton interpreter as the worker's CPU device, without the work whose result it drops.

A candidate's Triton kernel runs on the CPU through Triton's interpreter, and most of a CPU
judging's time is spent there (the default job: 33 of 55 CPU seconds). Two parts of that
time change nothing a kernel can observe, and the worker (and TritonBench's script runner)
switches them off:

- the overflow sanitiser: with `sanitize_overflow` set (the interpreter's default), every
  integer add, sub and mul is computed again in int64 and compared against the type's range,
  to feed a `device_assert` that does nothing unless `debug` is set, which the interpreter
  never sets (it has no switch for it). A third of the interpreter's time went to those
  dropped checks;
- the per-launch lookup of `triton.language`'s builtins: each launch swaps every builtin of
  `tl`, `tl.tensor` and `tl.math` for its interpreted form and back, and found them by
  `inspect.getmembers`, which sorts and walks the whole module (1 ms a launch). The builtins
  are found once per module, and found again only where one of them was rebound since.

Where the interpreter does not have the shape this reads (another Triton version), nothing is
changed. tests/test_interpreter_device.py runs kernels both ways and compares them bit for bit.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any


def install() -> None:
    """Switch the two off in this process's interpreter; a no-op without Triton."""
    try:
        from triton.language import core
        from triton.runtime import interpreter
    except ImportError:
        return
    _drop_unasserted_overflow_checks(interpreter)
    _find_builtins_once(interpreter, core)


def _drop_unasserted_overflow_checks(interpreter: Any) -> None:
    builder = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if options is None or not dataclasses.is_dataclass(options):
        return
    if getattr(options, "debug", True) or not getattr(options, "sanitize_overflow", False):
        return  # with debug on the checks assert: they stay
    builder.options = dataclasses.replace(options, sanitize_overflow=False)


def _find_builtins_once(interpreter: Any, core: Any) -> None:
    patch_attr = getattr(interpreter, "_patch_attr", None)
    is_builtin = getattr(core, "is_builtin", None)
    if patch_attr is None or is_builtin is None or not hasattr(interpreter, "_patch_builtin"):
        return
    found: dict[int, list[tuple[str, Any]]] = {}

    def patch_builtin(pkg: Any, builder: Any, scope: Any) -> None:
        members = found.get(id(pkg))
        # Found again where the module's builtins changed since (code that rebinds one):
        # the same set getmembers would find now.
        if members is None or any(getattr(pkg, name, None) is not member
                                  for name, member in members):
            members = [(name, member) for name, member in inspect.getmembers(pkg)
                       if is_builtin(member)]
            found[id(pkg)] = members
        for name, member in members:
            patch_attr(pkg, name, member, builder, scope)

    interpreter._patch_builtin = patch_builtin
