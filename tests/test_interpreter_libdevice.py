"""libdevice on Triton's interpreter (kdiff.sandbox.interpreter_libdevice): each class of
function held to its definition, and kernels that call it run in a candidate's worker."""
from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from kdiff.sandbox.interpreter_libdevice import IMPLS, implementation

triton = pytest.importorskip("triton")

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
CUDA_LIBDEVICE = Path(triton.__file__).parent / "language" / "extra" / "cuda" / "libdevice.py"
# What has no CPU implementation: the Bessel functions, and rcp64h (an approximation of the
# reciprocal's high word whose exact bits CUDA does not document).
UNIMPLEMENTED = {"j0", "j0f", "j1", "j1f", "jn", "jnf", "y0", "y0f", "y1", "y1f", "yn", "ynf",
                 "cyl_bessel_i1", "cyl_bessel_i1f", "rcp64h"}


def call(name: str, *args, out=F32) -> np.ndarray:
    return implementation(f"__nv_{name}")([np.asarray(a) for a in args], np.dtype(out))


def test_every_libdevice_symbol_is_implemented_or_named_as_not():
    symbols = set(re.findall(r'"__nv_([a-z0-9_]+)"', CUDA_LIBDEVICE.read_text()))
    assert symbols - IMPLS.keys() == UNIMPLEMENTED
    assert IMPLS.keys() <= symbols  # nothing registered under a name Triton does not dispatch
    with pytest.raises(NotImplementedError, match="j0f"):
        implementation("__nv_j0f")


def _draws(dtype: np.dtype, n: int = 300) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    def one():
        return (rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n))).astype(dtype)
    return one(), one(), one()


def _exact(op: str, *vals: float) -> Fraction:
    a = [Fraction(float(v)) for v in vals]
    return {"add": lambda: a[0] + a[1], "sub": lambda: a[0] - a[1], "mul": lambda: a[0] * a[1],
            "div": lambda: a[0] / a[1], "rcp": lambda: 1 / a[0],
            "fma": lambda: a[0] * a[1] + a[2]}[op]()


def _neighbours(r, dtype):
    return (Fraction(float(np.nextafter(r, dtype.type(-np.inf)))),
            Fraction(float(np.nextafter(r, dtype.type(np.inf)))))


def _assert_rounded(r, q: Fraction, mode: str, dtype: np.dtype, what: str):
    """r is q rounded in `mode` to `dtype`, by the definition: the nearest (ties to even), or
    the neighbour on the mode's side."""
    value = Fraction(float(r))
    below, above = _neighbours(r, dtype)
    if mode == "rd" or mode == "rz" and q >= 0:
        assert value <= q < above, what
    elif mode == "ru" or mode == "rz" and q < 0:
        assert below < q <= value, what
    else:
        assert abs(value - q) <= abs(below - q) and abs(value - q) <= abs(above - q), what
        if abs(value - q) in (abs(below - q), abs(above - q)) and value != q:
            assert int(np.asarray(r).view(np.int64 if dtype == F64 else np.int32)) % 2 == 0, what


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("mode", ["rn", "rz", "rd", "ru"])
def test_operations_with_a_rounding_mode_round_the_exact_value(dtype, mode):
    a, b, c = _draws(dtype)
    p32 = dtype == F32
    names = {"add": ("fadd" if p32 else "dadd"), "sub": ("fsub" if p32 else "dsub"),
             "mul": ("fmul" if p32 else "dmul"), "div": ("fdiv" if p32 else "ddiv"),
             "rcp": ("frcp" if p32 else "drcp"), "fma": ("fmaf" if p32 else "fma")}
    for op, prefix in names.items():
        args = (a,) if op == "rcp" else (a, b, c) if op == "fma" else (a, b)
        got = call(f"{prefix}_{mode}", *args, out=dtype)
        for i in range(0, len(a), 7):
            vals = [x[i] for x in args]
            _assert_rounded(got[i], _exact(op, *vals), mode, dtype, f"{prefix}_{mode}{vals}")
    roots = call(f"{'fsqrt' if p32 else 'dsqrt'}_{mode}", np.abs(a), out=dtype)
    for i in range(0, len(a), 7):
        r, x = Fraction(float(roots[i])), Fraction(float(abs(a[i])))
        below, above = _neighbours(roots[i], dtype)
        if mode in ("rd", "rz"):
            assert r * r <= x < above * above
        elif mode == "ru":
            assert below * below < x <= r * r


def test_fp32_to_nearest_is_ieee_single_arithmetic():
    a, b, _ = _draws(F32)
    with np.errstate(all="ignore"):
        assert np.array_equal(call("fadd_rn", a, b), a + b)
        assert np.array_equal(call("fdiv_rn", a, b), a / b)
        assert np.array_equal(call("fsqrt_rn", np.abs(a)), np.sqrt(np.abs(a)))


def test_an_exact_zero_sum_is_negative_only_rounding_down():
    one = np.float32(1.0)
    assert math.copysign(1, call("fadd_rn", one, -one)[()]) > 0
    assert math.copysign(1, call("fadd_rd", one, -one)[()]) < 0
    assert math.copysign(1, call("fadd_rd", np.float32(0.0), np.float32(0.0))[()]) > 0


def test_fma_rounds_once():
    # (1 + 2^-23)(1 - 2^-23) = 1 - 2^-46: a product then a sum would round to 1 before the -1
    a, b = np.float32(1 + 2 ** -23), np.float32(1 - 2 ** -23)
    assert call("fmaf_rn", a, b, np.float32(-1.0))[()] == np.float32(-(2.0 ** -46))
    assert call("fmaf", a, b, np.float32(-1.0))[()] == np.float32(-(2.0 ** -46))
    # (1 + 2^-12)^2 + 2^-80 is just above the fp32 midpoint 1 + 2^-11 + 2^-24: rounded to
    # fp64 first it would be the midpoint itself, and then round down to even
    a, tiny = np.float32(1 + 2 ** -12), np.float32(2.0 ** -80)
    assert call("fmaf_rn", a, a, tiny)[()] == np.float32(1 + 2 ** -11 + 2 ** -23)


def test_conversions_round_saturate_and_send_nan_to_zero():
    x = np.array([2.5, -2.5, -2.7, 3.5, 3e9, -3e9, np.nan, -1.5], dtype=F32)
    assert call("float2int_rn", x, out=np.int32).tolist() == \
        [2, -2, -3, 4, 2 ** 31 - 1, -(2 ** 31), 0, -2]
    assert call("float2int_rz", x, out=np.int32).tolist()[:4] == [2, -2, -2, 3]
    assert call("float2int_rd", x, out=np.int32).tolist()[:4] == [2, -3, -3, 3]
    assert call("float2int_ru", x, out=np.int32).tolist()[:4] == [3, -2, -2, 4]
    assert call("float2uint_rd", x[-1:], out=np.int32).tolist() == [0]
    assert call("float2ll_rn", np.array([2.0 ** 40], dtype=F32), out=np.int64).tolist() == \
        [2 ** 40]
    big = np.array([2 ** 24 + 1], dtype=np.int32)  # between two fp32 values
    assert call("int2float_rd", big)[0] == 2 ** 24 and call("int2float_ru", big)[0] == 2 ** 24 + 2
    third = np.array([1 / 3], dtype=F64)
    assert call("double2float_rd", third)[0] < Fraction(1, 3) < call("double2float_ru", third)[0]
    assert call("llroundf", np.array([2.5, -2.5], dtype=F32), out=np.int64).tolist() == [3, -3]
    assert call("llrintf", np.array([2.5, -2.5], dtype=F32), out=np.int64).tolist() == [2, -2]


def test_bit_casts_and_words():
    assert call("float_as_int", np.array([1.0], dtype=F32), out=np.int32)[0] == 0x3F800000
    assert call("int_as_float", np.array([0x3F800000], dtype=np.int32))[0] == 1.0
    x = np.array([math.pi, -1e300, 5e-324], dtype=F64)
    hi = call("double2hiint", x, out=np.int32)
    lo = call("double2loint", x, out=np.int32)
    assert np.array_equal(call("hiloint2double", hi, lo, out=F64), x)


def test_integer_functions():
    i32 = np.int32
    assert call("clz", np.array([1, 0, -1], dtype=i32), out=i32).tolist() == [31, 32, 0]
    assert call("popc", np.array([-1, 6], dtype=i32), out=i32).tolist() == [32, 2]
    assert call("brev", np.array([1], dtype=i32), out=i32).tolist() == [-(2 ** 31)]
    assert call("ffs", np.array([8, 0], dtype=i32), out=i32).tolist() == [4, 0]
    # CUDA's own example: selectors 0x5140 pick bytes 0, 4, 1, 5 of y:x
    assert call("byte_perm", np.array([0x33221100], dtype=i32), np.array([0x77665544], dtype=i32),
                np.array([0x5140], dtype=i32), out=i32)[0] == 0x55114400
    assert call("mulhi", np.array([-(2 ** 31)], dtype=i32), np.array([2], dtype=i32),
                out=i32)[0] == -1
    u32 = np.array([2 ** 32 - 1], dtype=np.uint32)
    assert call("umulhi", u32, u32, out=np.uint32)[0] == 2 ** 32 - 2
    u64 = np.array([2 ** 64 - 1], dtype=np.uint64)
    assert call("umul64hi", u64, u64, out=np.uint64)[0] == 2 ** 64 - 2
    big = np.array([2 ** 31 - 1], dtype=i32)
    assert call("hadd", big, big, out=i32)[0] == 2 ** 31 - 1  # no overflow on the way
    assert call("rhadd", np.array([1], dtype=i32), np.array([2], dtype=i32), out=i32)[0] == 2
    assert call("abs", np.array([-(2 ** 31)], dtype=i32), out=i32)[0] == -(2 ** 31)
    assert call("mul24", np.array([2 ** 24 + 3], dtype=i32), np.array([2], dtype=i32),
                out=i32)[0] == 6  # only the low 24 bits take part


def test_math_functions_at_their_defining_values():
    f = lambda name, *args: call(name, *(np.array(a, dtype=F64) for a in args), out=F64)  # noqa: E731
    assert f("sinpi", [1.0, 0.5, -2.0]).tolist() == [0.0, 1.0, -0.0]
    assert f("cospi", [0.5, 1.0, 1.5]).tolist() == [0.0, -1.0, 0.0]
    assert f("round", [2.5, -2.5, 0.49999999999999994]).tolist() == [3.0, -3.0, 0.0]
    assert f("rint", [2.5, 3.5]).tolist() == [2.0, 4.0]
    assert f("remainder", [5.0, 7.0], [2.0, 2.0]).tolist() == [1.0, -1.0]
    assert f("fdim", [1.0, 3.0], [3.0, 1.0]).tolist() == [0.0, 2.0]
    assert f("logb", [0.75, 0.0]).tolist() == [-1.0, -math.inf]
    assert call("ilogb", np.array([8.0, 0.0, np.inf]), out=np.int32).tolist() == \
        [3, -(2 ** 31), 2 ** 31 - 1]
    assert f("tgamma", [0.0, -1.0, 5.0]).tolist()[0] == math.inf
    assert math.isnan(f("tgamma", [-1.0])[0]) and f("tgamma", [5.0])[0] == 24.0
    assert f("lgamma", [0.0, -2.0]).tolist() == [math.inf, math.inf]
    assert call("saturatef", np.array([np.nan, -1, 2, 0.5], dtype=F32)).tolist() == \
        [0, 0, 1, 0.5]
    x = np.array([-3.0, -0.5, 0.1, 0.9, 4.0, 9.0])
    assert np.allclose(f("erfinv", f("erf", x[:4])), x[:4], rtol=1e-14)
    assert np.allclose(f("erfcinv", f("erfc", x)), x, rtol=1e-12)
    assert np.allclose(f("normcdfinv", f("normcdf", x[:5])), x[:5], rtol=1e-12)
    # erfcx: the direct formula below 25 and the asymptotic series above agree there
    assert abs(f("erfcx", [24.999999])[0] / f("erfcx", [25.0])[0] - 1) < 1e-6


def test_fast_approximations_flush_subnormals():
    x = np.array([-88.0], dtype=F32)  # exp(-88) = 6.1e-39, below fp32's normal range
    assert call("expf", x)[0] > 0 and call("fast_expf", x)[0] == 0
    one, huge = np.array([1.0], dtype=F32), np.array([2.0 ** 127], dtype=F32)
    assert call("fdiv_rn", one, huge)[0] > 0 and call("fast_fdividef", one, huge)[0] == 0
    tiny = np.array([1e-40], dtype=F32)  # a subnormal input is read as zero
    assert call("fast_logf", tiny)[0] == -np.inf and np.isfinite(call("logf", tiny)[0])


LIBDEVICE_CANDIDATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _norm_tanh(x_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    rstd = libdevice.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps.to(tl.float32))
    tl.store(out_ptr + row * n_cols + cols, libdevice.tanh(x * rstd), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        _norm_tanh[(x.shape[0],)](x, out, x.shape[1], 1e-5, BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
'''


def test_a_worker_runs_kernels_that_call_libdevice_and_type_their_floats(tmp_path):
    """As Liger-Kernel's norms do: libdevice's rsqrt, and `.to` on a float argument."""
    import torch

    from kdiff.sandbox.process import CandidateProcess
    problem = Path(__file__).parent / "fixtures" / "kernelbench_checkout" / "KernelBench" / \
        "level1" / "1_Double.py"
    candidate = tmp_path / "norm_tanh.py"
    candidate.write_text(LIBDEVICE_CANDIDATE)
    x = torch.randn(4, 16)
    with CandidateProcess(problem, candidate) as worker:
        worker.request("build", key="c", role="candidate", seed=0, dtype="float32",
                       init_inputs=[])
        reply = worker.request("call", key="c", inputs=[x])
    expected = torch.tanh(x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-5))
    torch.testing.assert_close(reply["outputs"][0], expected)
