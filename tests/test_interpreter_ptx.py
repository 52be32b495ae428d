"""Inline PTX on Triton's interpreter (kdiff.sandbox.interpreter_ptx): the single f32
instructions it runs, held to the PTX ISA's definitions, and the rest refused by name."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from kdiff.sandbox.interpreter_ptx import instruction

F32 = np.float32
TINY = np.finfo(np.float32).tiny  # the smallest normal fp32


def run(asm: str, *args) -> np.ndarray:
    constraints = ",".join(["=f"] + ["f"] * len(args))
    return instruction(asm, constraints, 1)([np.asarray(a, dtype=F32) for a in args])


def test_ftz_reads_and_writes_subnormals_as_zero_of_their_sign():
    x = np.array([1e-39, -3e-39, 1.5, 2.0 ** -70], dtype=F32)
    y = np.array([2.0, 1.0, 2.0, 2.0 ** -70], dtype=F32)
    plain, flushed = run("mul.f32 $0, $1, $2;", x, y), run("mul.ftz.f32 $0, $1, $2;", x, y)
    assert np.array_equal(plain, x * y)  # .rn is the default: IEEE's product
    assert plain[0] != 0 and plain[3] == 2.0 ** -140  # subnormal products of normal operands
    assert flushed.tolist() == [0.0, -0.0, 3.0, 0.0]
    assert math.copysign(1, flushed[1]) < 0
    # a normal product whose result is subnormal is flushed too
    assert run("mul.ftz.f32 $0, $1, $2;", [TINY], [0.5])[0] == 0
    assert run("mul.f32 $0, $1, $2;", [TINY], [0.5])[0] == TINY / 2


@pytest.mark.parametrize("ptx,side", [("rz", "toward zero"), ("rm", "down"), ("rp", "up")])
def test_a_rounding_mode_rounds_the_exact_sum(ptx, side):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(200) * 1e3).astype(F32)
    b = (rng.standard_normal(200) * 1e-3).astype(F32)
    got = run(f"add.{ptx}.f32 $0, $1, $2;", a, b)
    for x, y, r in zip(a, b, got):
        exact, value = Fraction(float(x)) + Fraction(float(y)), Fraction(float(r))
        if side == "down" or side == "toward zero" and exact > 0:
            assert value <= exact
        else:
            assert value >= exact
        assert abs(value - exact) < abs(Fraction(float(np.spacing(r))))


def test_fma_rounds_once():
    a = np.float32(1 + 2 ** -12)
    assert run("fma.rn.f32 $0, $1, $2, $3;", [a], [a], [2.0 ** -80])[0] == \
        np.float32(1 + 2 ** -11 + 2 ** -23)


def test_min_max_nan_and_saturation():
    nan = np.float32(np.nan)
    assert run("min.f32 $0, $1, $2;", [nan, 1.0], [2.0, nan]).tolist() == [2.0, 1.0]
    assert np.isnan(run("max.NaN.f32 $0, $1, $2;", [nan], [2.0])[0])
    assert run("add.sat.f32 $0, $1, $2;", [0.7, -1.0, nan], [0.7, 0.5, 1.0]).tolist() == \
        [1.0, 0.0, 0.0]


@pytest.mark.parametrize("asm", [
    "tanh.approx.f32 $0, $1;",  # bounded by the ISA, not defined
    "div.full.f32 $0, $1, $2;",
    "div.f32 $0, $1, $2;",  # no rounding mode: the approximate division
    "mul.f32 $0, $1, $2; add.f32 $0, $0, $1;",  # two instructions
    "mul.f32 $0, $2, $1;",  # operands out of order
    "mul.rn.f16 $0, $1, $2;",
])
def test_anything_else_is_refused_naming_it(asm):
    with pytest.raises(NotImplementedError, match="--device cuda"):
        instruction(asm, "=f,f,f", 1)


def test_packed_invocations_are_refused():
    with pytest.raises(NotImplementedError, match="pack=2"):
        instruction("mul.f32 $0, $1, $2;", "=r,r,r", 2)
