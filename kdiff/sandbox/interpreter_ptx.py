"""Inline PTX on Triton's interpreter: the one-instruction forms whose result the PTX ISA and
IEEE 754 define bit for bit.

`tl.inline_asm_elementwise` raises in the interpreter, so a kernel that writes one product
as inline PTX (`mul.ftz.f32 $0, $1, $2;`: a flush to zero "for speed") could not be judged on
the CPU at all. Here the interpreter's builder answers `create_inline_asm` for a single f32
instruction, one element an invocation (`pack` 1):
- add, sub, mul (rounding .rn, the default, .rz, .rm or .rp), fma, div, sqrt and rcp (a
  rounding mode named), exact through kdiff.sandbox.interpreter_libdevice's rounded operations;
- neg, abs, min and max (a NaN operand gives the other one; with .NaN, NaN);
- .ftz: subnormal operands and results read and written as zero of their sign; .sat: the
  result clamped to [0, 1], NaN to 0.
Everything else raises a NotImplementedError that names the instruction: the `.approx`
instructions (`tanh.approx.f32`, `ex2.approx.f32`) have errors the PTX ISA bounds but does not
define, so the CPU cannot compute what the GPU returns. Such kernels are judged on CUDA.
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from kdiff.sandbox import interpreter_libdevice

F32 = np.dtype(np.float32)
INSTRUCTION = re.compile(
    r"^\s*(?P<op>[a-z0-9]+)(?P<mods>(?:\.[A-Za-z0-9]+)*)\.f32\s+\$0\s*,"
    r"(?P<args>\s*\$\d+\s*(?:,\s*\$\d+\s*)*);?\s*$")
ROUNDING = {"rn": "rn", "rz": "rz", "rm": "rd", "rp": "ru"}  # PTX's names, libdevice's
ARITY = {"add": 2, "sub": 2, "mul": 2, "fma": 3, "div": 2, "sqrt": 1, "rcp": 1, "neg": 1,
         "abs": 1, "min": 2, "max": 2}
ROUNDED = {"add": "fadd", "sub": "fsub", "mul": "fmul", "fma": "fmaf", "div": "fdiv",
           "sqrt": "fsqrt", "rcp": "frcp"}  # the libdevice names of the rounded operations
DEFAULT_RN = ("add", "sub", "mul")  # where PTX lets the rounding mode be left out


def refuse(asm: str, why: str) -> NotImplementedError:
    return NotImplementedError(f"inline PTX {asm.strip()!r} does not run on the CPU ({why}): "
                               f"judge this kernel with --device cuda")


def _min_max(pick: Callable, propagate_nan: bool) -> Callable:
    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        either = np.where(np.isnan(a), b, np.where(np.isnan(b), a, pick(a, b)))
        return np.where(np.isnan(a) | np.isnan(b), np.float32(np.nan), either) \
            if propagate_nan else either
    return run


def instruction(asm: str, constraints: str, pack: int) -> Callable[[list[np.ndarray]], np.ndarray]:
    """The function of the operands' fp32 arrays that `asm` computes; NotImplementedError
    for anything but the forms of the module docstring."""
    if pack != 1:
        raise refuse(asm, f"pack={pack}")
    m = INSTRUCTION.match(asm)
    if m is None:
        raise refuse(asm, "not a single f32 instruction")
    op, mods = m.group("op"), [x for x in m.group("mods").split(".") if x]
    operands = [int(a.strip()[1:]) for a in m.group("args").split(",")]
    if op not in ARITY or operands != list(range(1, ARITY[op] + 1)):
        raise refuse(asm, "its result is not defined bit for bit, or its operands are not "
                           "$1.. in order")
    rounding = [x for x in mods if x in ROUNDING]
    other = [x for x in mods if x not in ROUNDING]
    if len(rounding) > 1 or any(x not in ("ftz", "sat", "NaN") for x in other) or \
            ("sat" in other and op in ("min", "max", "neg", "abs")) or \
            ("NaN" in other and op not in ("min", "max")):
        raise refuse(asm, f"modifiers {'.'.join(mods)}")
    if op in ROUNDED:
        if not rounding and op not in DEFAULT_RN:
            raise refuse(asm, "an approximation: no rounding mode named")
        rounded = interpreter_libdevice.implementation(
            f"__nv_{ROUNDED[op]}_{ROUNDING[rounding[0] if rounding else 'rn']}")
        compute = lambda *xs: rounded(list(xs), F32)  # noqa: E731
    elif rounding:
        raise refuse(asm, f"a rounding mode on {op}")
    else:
        compute = {"neg": np.negative, "abs": np.abs,
                   "min": _min_max(np.minimum, "NaN" in other),
                   "max": _min_max(np.maximum, "NaN" in other)}[op]
    ftz, sat = "ftz" in other, "sat" in other

    def run(args: list[np.ndarray]) -> np.ndarray:
        # a 32-bit integer operand in an "r" register holds a float's bits
        xs = [a.view(F32) if a.dtype.kind in "iu" and a.dtype.itemsize == 4 else a.astype(F32)
              for a in args]
        if ftz:
            xs = [interpreter_libdevice.flush_subnormals(x) for x in xs]
        with np.errstate(all="ignore"):
            out = np.asarray(compute(*xs)).astype(F32)
        if ftz:
            out = interpreter_libdevice.flush_subnormals(out)
        if sat:
            out = np.where(np.isnan(out), np.float32(0), np.clip(out, 0, 1)).astype(F32)
        return out

    if not re.fullmatch(r"=[rf](,[rf])*", constraints.replace(" ", "")) or \
            constraints.count(",") != ARITY[op]:
        raise refuse(asm, f"constraints {constraints!r}")
    return run
