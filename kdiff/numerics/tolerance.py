"""The tolerance model and the structured mismatch report.

Per output element:
  bound_i = c * u(dtype) * f(N) * scale_i + floor(dtype) + q_i * scale_i + underflow(out),
  u        the unit roundoff of the arithmetic (fp32 for a problem stored in bf16, fp16 or
           fp8: the accumulation its contract declares),
  N        the reduction depth the oracle traced (`oracle.py`),
  f(N)     sqrt(N) (probabilistic model) or N (worst case, `gamma_N`),
  scale_i  the oracle's traced magnitude: |oracle_i| plus the size of what was summed,
  q_i      the quantization the oracle traced: the sum of the unit roundoffs of the storage
           roundings coarser than the arithmetic on the chain behind the element (a bf16
           output, an explicit `.to(torch.float8_e4m3fn)` in the reference),
  underflow  for an output stored coarser than the arithmetic (fp16, fp8), half the spacing of
           its format's gradual underflow (`underflow`), which no relative term covers.
Bounds are derived, never fitted to a candidate. The candidate's error is measured against the
float64 oracle.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

import torch

# Unit roundoff u = 2^-p for a p-bit significand (round to nearest): fp32 p=24, fp16 p=11,
# bf16 p=8 (IEEE 754-2019; bfloat16 keeps 7 stored + 1 implicit bits); the OCP 8-bit
# formats (OFP8 spec v1.0, 2023) keep 3 (E4M3) and 2 (E5M2) stored bits, p=4 and p=3.
UNIT_ROUNDOFF = {
    torch.float32: 2.0 ** -24,
    torch.float16: 2.0 ** -11,
    torch.bfloat16: 2.0 ** -8,
    torch.float8_e4m3fn: 2.0 ** -4,
    torch.float8_e5m2: 2.0 ** -3,
    torch.float64: 2.0 ** -53,
}

# Probabilistic bound constant lambda (Higham & Mary, "A New Approach to Probabilistic
# Rounding Error Analysis", SISC 2019, Thm 2.4): with rounding errors modelled as independent
# and mean-zero, |error| <= lambda * sqrt(N) * u * sum|terms| holds with probability at least
# 1 - 2 exp(-lambda^2 / 2) per element. lambda = 8 gives a failure probability of 2.5e-14 per
# element, so a gate judging 10^7 elements flags an honest fp32 kernel with probability under
# 3e-7. It also absorbs the few ulps of error allowed to library transcendental functions
# (exp, tanh, erf: at most 4 ulp in SLEEF, glibc and CUDA's libdevice), each counted as one
# step of depth.
LAMBDA = 8.0

# Elements whose oracle magnitude lies in the subnormal range are judged against the smallest
# normal number: below it a float format has no relative precision to speak of.
SMALLEST_NORMAL = {dt: torch.finfo(dt).tiny for dt in UNIT_ROUNDOFF}

# Before judging anyone, a thresholded gate checks that the reference itself, run in the
# working precision, uses at most half of the bound: the bound must leave room for an honest
# implementation with another summation order, whose error is of the same size as the
# reference's. Otherwise the contract is under-specified for these inputs.
REFERENCE_MARGIN = 2.0


def unit_roundoff(dtype: torch.dtype) -> float:
    """u of a floating format: the table above, else eps / 2 (eps = 2^(1-p)); of a complex
    one, its components' (complex64: fp32)."""
    if dtype.is_complex:
        dtype = dtype.to_real()
    return UNIT_ROUNDOFF.get(dtype) or torch.finfo(dtype).eps / 2


def underflow(dtype: torch.dtype) -> float:
    """The most a rounding to `dtype` errs below its smallest normal number: half the spacing
    of gradual underflow, which is the smallest subnormal, tiny * 2u (IEEE 754; OFP8 E4M3
    2^-9, fp16 2^-24), so u * tiny. A result rounded into that range errs by up to this
    whatever its size (E4M3 of 0.003 is 0.0039), where u_q * scale_i shrinks with it."""
    return unit_roundoff(dtype) * torch.finfo(dtype).tiny


# Formats torch has no comparison, isfinite or sign for on the CPU.
FP8 = frozenset({torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz,
                 torch.float8_e5m2fnuz})


def inexact(t: torch.Tensor) -> bool:
    """A floating or complex tensor: one judged by value against a bound."""
    return t.is_floating_point() or t.is_complex()


def in_double(t: torch.Tensor) -> torch.Tensor:
    """`t` in float64, or complex128 where it is complex (`.double()` drops the imaginary
    part)."""
    return t.to(torch.complex128 if t.is_complex() else torch.float64)


def components(t: torch.Tensor) -> torch.Tensor:
    """A complex tensor as its real and imaginary components (torch.view_as_real: a trailing
    dim of 2, of a copy where `t` is a lazy conjugate); any other as it is."""
    return torch.view_as_real(t.resolve_conj()) if t.is_complex() else t


def per_component(t: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor | None:
    """A per-element tensor (a bound, a mask) of the complex tensor `like` for each of its
    components (`components`): the bound of a complex element bounds the modulus of its
    error, and so each component's; any other as it is."""
    if t is None or not like.is_complex():
        return t
    return t.expand(like.shape).unsqueeze(-1).expand(*like.shape, 2)


def comparable(t: torch.Tensor) -> torch.Tensor:
    """`t`, with fp8 widened to fp32 (exact: every fp8 value is an fp32 value), so that the
    gates can classify and compare its elements."""
    return t.to(torch.float32) if t.dtype in FP8 else t


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bit patterns (NaN payloads and signed zeros included)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.itemsize in (1, 2, 4, 8):
        view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.dtype.itemsize]
        return bool(torch.equal(a.contiguous().view(view), b.contiguous().view(view)))
    return bool(torch.equal(a, b))


class BoundModel(Enum):
    """How rounding errors add up along a chain of N roundings."""

    PROBABILISTIC = "probabilistic"  # independent, mean zero: LAMBDA u sqrt(N)
    WORST_CASE = "worst_case"  # all of one sign: gamma_N


def gamma(depth: int, u: float) -> float:
    """Higham's gamma_N = N u / (1 - N u) (Lemma 3.1): the most N roundings of unit roundoff
    u, all of one sign, move a value, relative. Exact rather than the 1.01 N u it is often
    written as, which holds only while N u <= 0.01 (fp32 chains of 1.7e5 roundings, bf16's of
    2); inf from N u = 1 on, where no worst-case bound holds."""
    n = max(depth, 1)
    return n * u / (1 - n * u) if n * u < 1 else math.inf


def per_unit_error(depth: int, dtype: torch.dtype,
                   model: BoundModel = BoundModel.PROBABILISTIC) -> float:
    """The most the arithmetic lets a value computed at `depth` in `dtype` err by, per unit
    of its scale, under `model`: LAMBDA u sqrt(N), or gamma_N."""
    u = unit_roundoff(dtype)
    if model is BoundModel.PROBABILISTIC:
        return LAMBDA * u * math.sqrt(max(depth, 1))
    return gamma(depth, u)


def scaled(per_unit: float, scale: torch.Tensor) -> torch.Tensor:
    """`per_unit` times `scale`, 0 where the scale is 0 (an exact value), also past the
    worst case's reach (an infinite gamma_N)."""
    if math.isfinite(per_unit):
        return per_unit * scale
    return torch.where(scale > 0, math.inf, 0.0).to(scale.dtype)


def relative_error(depth: int, dtype: torch.dtype, quantization: float = 0.0) -> float:
    """w: the most either bound model lets a value computed at `depth` in `dtype` err by, per
    unit of its scale (per_unit_error), plus its storage roundings."""
    return max(per_unit_error(depth, dtype), per_unit_error(depth, dtype, BoundModel.WORST_CASE)
               ) + quantization


def second_order(w_a: float, m_a: torch.Tensor, w_b: float, m_b: torch.Tensor) -> torch.Tensor:
    """The scale a product a b gains beyond the first-order |a| M_b + |b| M_a: its operands'
    errors times each other, e_a e_b with e = w M. First order drops it, and it is all there
    is where both factors cancelled to about 0 and kept errors as large as themselves (a
    LayerNorm backward's xhat times mean(g xhat) at an element equal to its row's mean, an
    offset of 1e6: an honest fp32 kernel erred by 3e-3 against a bound of 1e-5). As a scale:
    under either model the product's bound per unit of scale is at least its factors' (it is
    deeper, and its storage roundings include theirs), so min(w_a, w_b) M_a M_b covers
    e_a e_b = w_a w_b M_a M_b; w taken as the larger model's covers both. Nothing where
    either factor is exact (w = 0), and less than first order where a factor is larger than
    its error."""
    return scaled(min(w_a, w_b), m_a * m_b)


def admitted(got: torch.Tensor, expected: torch.Tensor, others: list[torch.Tensor]
             ) -> torch.Tensor:
    """Per element, the one of `others` that `got` equals (the other indices a decision's
    index output may honestly hold at a near tie: OracleResult.picks), else `expected`: an
    index among tied values is judged as the pick it is, any other against the oracle's."""
    if not others:
        return expected
    held = got.detach().to(expected.device)
    chosen = expected
    for other in others:
        other = other.to(expected.device)
        chosen = torch.where(held == other, other, chosen)
    return chosen


def bound(scale: torch.Tensor, depth: int, dtype: torch.dtype,
          model: BoundModel = BoundModel.PROBABILISTIC, quantization: float = 0.0,
          margin: float = 1.0, floor: float = 0.0) -> torch.Tensor:
    """The bound at arithmetic precision `dtype`, plus `quantization` (the oracle's q_i) and
    `floor`, the output format's `underflow` where it is stored coarser than `dtype`.

    A storage rounding to a format coarser than the arithmetic (round to nearest) errs by at
    most u_q times the value it rounds, and first-order propagation carries that error to the
    output as at most u_q * scale_i (the traced magnitude bounds |J| times the value of every
    intermediate): deterministic, so it enters without the probabilistic lambda, and
    unchanged by another summation order. `margin` divides only the arithmetic part: the room
    the reference's own check (REFERENCE_MARGIN) keeps is for another summation order; every
    honest implementation pays the final rounding to the stored format alike."""
    arithmetic = scaled(per_unit_error(depth, dtype, model), scale) + SMALLEST_NORMAL[dtype]
    if margin != 1.0:
        arithmetic = arithmetic / margin
    return arithmetic + quantization * scale + floor if quantization else arithmetic


def own_scale(t: torch.Tensor, may_read: bool = False) -> torch.Tensor:
    """|t| as an error scale, 0 where t is not finite. A non-finite value (a mask's -inf
    fill, an injected NaN) is judged by its class and no finite error moves it, so it adds
    nothing to what is computed from it: as |-inf| it made every magnitude of a masked
    softmax inf or NaN through the finite differences, and no value there was judged.
    `may_read`: the caller may wait for a value read back (a checking trace), and a sum
    shows the all-finite case (surely_finite), where |t| is the scale."""
    t = t.detach()
    if may_read and surely_finite(t):
        return t.abs()
    return torch.where(torch.isfinite(t), t.abs(), 0.0)


def surely_finite(t: torch.Tensor) -> bool:
    """Whether the floating or complex `t` is finite everywhere, by its sum (finite_sum):
    False for fp8, which has no sum on the CPU, and where the sum overflows, leaving the
    caller its element-by-element test. It reads the sum back, which a trusting trace
    (MagnitudeTracer.trusting) must not: each read waits for the GPU."""
    return inexact(t) and t.dtype not in FP8 and finite_sum(t)


def step_magnitude(step: torch.Tensor | float, dtype: torch.dtype) -> torch.Tensor | float:
    """The scale whose smallest bound at arithmetic `dtype` (worst case, one rounding, the
    reference's REFERENCE_MARGIN) is `step`: how the oracle carries, in its magnitudes, an
    absolute error that no rounding of the arithmetic makes, a step function's (a rounding to
    an integer landing one step away). Every larger bound (the probabilistic lambda, more
    depth, a coarser precision) covers it too, and it moves through later operations as any
    magnitude does (a dequantization's scale multiplies it)."""
    return step * (REFERENCE_MARGIN / gamma(1, unit_roundoff(dtype)))


def difference(got: torch.Tensor, expected: torch.Tensor, period: float | None = None
               ) -> torch.Tensor:
    """|got - expected|; for an output defined modulo `period` (an angle the problem
    declares in KDIFF_PERIODIC_OUTPUTS), the distance around the circle: values a whole
    number of periods apart are the same value."""
    err = (got - expected).abs()
    if not period:
        return err
    turned = torch.remainder(err, period)  # exact (IEEE remainder of positive operands)
    return torch.where(torch.isfinite(err), torch.minimum(turned, period - turned), err)


def turn_rounding(expected: torch.Tensor, arithmetic: torch.Tensor, period: float,
                  u: float) -> torch.Tensor:
    """What an output defined modulo `period` may err by beyond its bound where its exact value
    lies within the arithmetic bound of a whole number of periods: an honest result may land
    on the other side of the turn (-2^-71 is 2 pi - 2^-71), a representative about `period` in
    size, whose last rounding (unit roundoff `u`: the arithmetic's or the stored format's,
    whichever is coarser) errs at that size (2 pi - 2^-71 in bf16 is 6.28125). Elsewhere 0."""
    r = torch.remainder(expected, period)
    at_a_turn = torch.minimum(r, period - r) <= arithmetic
    return torch.where(at_a_turn, torch.full_like(arithmetic, u * period),
                       torch.zeros_like(arithmetic))


@dataclass
class Mismatch:
    """Where and how far a candidate's output leaves the bound, the way
    `torch.testing.assert_close` explains a failure."""

    output: int
    total: int
    judged: int
    exceeded: int
    worst_ratio: float
    worst_index: tuple[int, ...] | None
    expected: float | None
    got: float | None
    bound: float | None
    nonfinite_got: int = 0
    notes: list[str] = field(default_factory=list)
    rounded: int = 0  # elements whose non-zero error the allowance covers whole

    @property
    def ok(self) -> bool:
        return self.exceeded == 0

    def describe(self) -> str:
        if self.ok:
            return (f"output {self.output}: {self.judged}/{self.total} elements within bound "
                    f"(worst {self.worst_ratio:.3g}x of it)")
        where = f"at index {self.worst_index}" if self.worst_index is not None else ""
        text = (f"output {self.output}: {self.exceeded}/{self.judged} elements exceed the bound "
                f"(worst {self.worst_ratio:.3g}x {where}: expected {self.expected:.6g}, "
                f"got {self.got:.6g}, bound {self.bound:.3g})")
        if self.nonfinite_got:
            text += f"; {self.nonfinite_got} non-finite where the oracle is finite"
        return text


def finite_sum(t: torch.Tensor) -> bool:
    """Whether `t` sums to a finite value, which it does only where every element is finite
    (a NaN or an infinity carries through a sum): one vectorised pass where torch.isfinite
    and a mask took a tenth of a comparison each. False also where finite elements overflow
    the sum (values near float64's largest): then the caller tests element by element."""
    return bool(torch.isfinite(t.sum()))


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of element `flat` of a contiguous tensor of `shape` (torch.unravel_index's
    argument checks took a fifth of a comparison)."""
    index = []
    for n in reversed(shape):
        flat, i = divmod(flat, n)
        index.append(i)
    return tuple(reversed(index))


def compare(got: torch.Tensor, expected: torch.Tensor, bound_: torch.Tensor, output: int = 0,
            mask: torch.Tensor | None = None, allowance: torch.Tensor | None = None,
            period: float | None = None) -> Mismatch:
    """Judge `got` against the float64 `expected` element by element. Elements where the
    oracle is not finite, or the bound is not, are not judged here (EXC-01 owns them); `mask`
    restricts judging further (False: not judged); `period`, an output defined modulo it,
    is judged by the distance around the circle (`difference`). A complex output is judged
    component by component (`components`), each against its element's bound; its index
    ends with the component (0 real, 1 imaginary).

    `allowance` is the deterministic part of the bound (q_i * scale_i: the storage roundings,
    which any honest implementation may use up to the last bit): the ratio reported is the
    error beyond it over the rest of the bound, the probabilistic arithmetic part, so that an
    honest bf16 output rounded to nearest reads as the noise of its arithmetic, not as ~1.
    The verdict is the same: the ratio exceeds 1 exactly where the error exceeds the bound.

    Computed where the oracle is (the judge's device): the candidate's output, which comes back
    from the worker on the host, travels once in its working dtype, where moving the float64
    oracle and bound to the host and comparing there took three float64 copies and a
    single-threaded pass per call. Every step is exact in float64 (a difference, an absolute
    value, a correctly rounded division, comparisons, counts; argmax takes the first maximum),
    so the verdict does not depend on the device."""
    device = expected.device
    if expected.is_complex():
        bound_, mask, allowance = (per_component(t, expected) for t in (bound_, mask, allowance))
        got = components(got.detach().to(device=device, dtype=torch.complex128))
        expected = components(expected.detach())
    got64 = got.detach().to(device=device).to(torch.float64)
    exp64 = expected.detach().to(torch.float64)
    bnd = bound_.detach().to(device=device, dtype=torch.float64).expand_as(exp64)
    # None: every element is judged (the oracle and the bound finite everywhere, no mask),
    # and the passes that would select them are skipped
    judged = None
    if not (finite_sum(exp64) and finite_sum(bnd)):
        judged = torch.isfinite(exp64) & torch.isfinite(bnd)
    if mask is not None:
        mask = mask.to(device).expand_as(exp64)
        judged = mask if judged is None else judged & mask
    err = difference(got64, exp64, period)
    nonfinite_got = 0
    if not finite_sum(got64):
        nonfinite = ~torch.isfinite(got64) if judged is None else judged & ~torch.isfinite(got64)
        err = torch.where(nonfinite, torch.full_like(err, math.inf), err)
        nonfinite_got = int(nonfinite.sum())
    rounded = 0
    if allowance is not None:
        given = allowance.detach().to(device=device, dtype=torch.float64).expand_as(exp64)
        # where the bound is all allowance an error within it is 0 / 0: within, ratio 0
        ratio = ((err - given).clamp_min(0) / (bnd - given)).nan_to_num(nan=0.0,
                                                                         posinf=math.inf)
        within = (err > 0) & (err <= given)
        rounded = int((within if judged is None else judged & within).sum())
    else:
        ratio = err / bnd
    if judged is not None:
        ratio = torch.where(judged, ratio, torch.zeros_like(err))
    exceeded = int((ratio > 1).sum())
    n_judged = exp64.numel() if judged is None else int(judged.sum())
    if n_judged == 0:
        return Mismatch(output, exp64.numel(), 0, 0, 0.0, None, None, None, None)
    flat = int(torch.argmax(torch.nan_to_num(ratio, nan=math.inf, posinf=math.inf)))
    idx = _unravel(flat, tuple(exp64.shape))
    worst = float(ratio.reshape(-1)[flat])
    return Mismatch(output=output, total=exp64.numel(), judged=n_judged, exceeded=exceeded,
                    worst_ratio=worst, worst_index=idx,
                    expected=float(exp64.reshape(-1)[flat]), got=float(got64.reshape(-1)[flat]),
                    bound=float(bnd.reshape(-1)[flat]), nonfinite_got=nonfinite_got,
                    rounded=rounded)
