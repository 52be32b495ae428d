"""The float64 oracle: the reference evaluated in float64, traced op by op to learn, for every
output element, how large the operands that produced it were (its error *scale*) and how many
rounding steps lie on the longest chain of operations behind it (its reduction *depth* N).

Both feed the tolerance model (`tolerance.py`): bound_i = c * u * sqrt(N) * scale_i.

Magnitude propagation rules (a first-order forward error analysis):
- contractions (matmul, convolution, sums, means, cumulative sums): the same operation applied
  to the operands' magnitudes, i.e. |A|@|B| for A@B. This is the classical componentwise bound
  for a dot product, |fl(x.y) - x.y| <= gamma_N |x|.|y| (Higham, Accuracy and Stability of
  Numerical Algorithms, 2nd ed., eq. 3.5).
- every other floating operation: |out| plus, for each floating operand k, the directional
  derivative of the operation along that operand's magnitude, |J_k M_k|, taken by a central
  difference in float64. For elementwise ops this is exactly |f'(x)| M, the first-order
  propagation of an operand error of size u*M.
A non-finite value (a mask's -inf fill) is exact: its own scale is 0, and an output the
finite differences leave unchanged (-inf, NaN) has slope 0.
Depth: contractions add their reduction length (matmul K, convolution C_in/groups*kh*kw, the
number of summed elements); other reductions (softmax, norms, variance) add the number of
elements each output reads; elementwise ops add 1; data movement adds 0.

Decisions (`integers.py`): an index an operation picks by comparing values (argmax, argmin, max and min along
a dim, sort, top-k, k-th value, median) is exact where its values are told apart, and is not
judged where another value is within both values' worst-case rounding error of the chosen
one (a near tie): there any honest arithmetic may pick either, and the reference's own pick
is one rounding's doing. An exact tie of values read as they are stored is judged only where
the op documents its pick (the first occurrence for argmax and max, a stable sort's order).

Steps: a rounding to integers (STEPS, a cast to an integer format) or a comparison of computed
values (COMPARISONS, a mask) is exact where its operand is told apart from a step, and may land
a step away where the operand lies within its worst-case error of one; how far, the step
function at both ends of that interval, enters the magnitude as `step_magnitude` and moves with
the integers (integers.carried) into what is computed from them.

Precision: the reference is the intent, so every floating cast it makes (`.to(torch.bfloat16)`,
`.half()`, `dtype=` of a factory or a reduction; a format read from a tensor, `dtype=x.dtype`,
names x's working format: working_formats.py) is evaluated in float64 too, and so is a
tensor it makes in torch's default dtype (`torch.zeros(n)`, a literal), from the working
run's values; beside each
tensor the trace keeps the format it is *stored* in when the reference runs at its working
precision (an input's or parameter's own dtype, a cast's target, the promotion of an op's
operands) and its *quantization*: the sum of the unit roundoffs of the storage roundings
coarser than the arithmetic on the chain behind it (an op whose bf16 output is rounded from
fp32 arithmetic, an explicit cast down). The tolerance model adds that sum times the scale.
"""
from __future__ import annotations

import contextlib
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Sequence

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._pytree import tree_map

from kdiff.data.differentiated import floating_positions
from kdiff.data.dispatch import EagerDispatchMode
from kdiff.data.vjp import BackwardAbandoned, differentiable, input_gradients_interruptibly
from kdiff.numerics import kinks, normalisation_backward, softmax_backward
from kdiff.numerics.accumulation import RUNNING_PRODUCTS
from kdiff.numerics.classes import classes
from kdiff.numerics.integers import (
    BINARY_STEPS,
    COMPARISONS,
    DECISIONS,
    INTEGRAL_STEPS,
    Decision,
    IntegerTrace,
    OpenPicks,
    admissible_picks,
    bound_arguments,
    carried,
    how_far,
    is_step,
    moves,
    open_picks,
    undefined_cast,
)
from kdiff.numerics.operands import flatten
from kdiff.numerics.tolerance import (
    SMALLEST_NORMAL,
    BoundModel,
    inexact,
    own_scale,
    per_unit_error,
    relative_error,
    scaled,
    second_order,
    step_magnitude,
    surely_finite,
    unit_roundoff,
)
from kdiff.numerics.windows import POOLS, pooled_picks
from kdiff.numerics.working_formats import WorkingFormats

aten = torch.ops.aten

# Operations linear in each floating operand whose error scale is the operation applied to the
# operands' magnitudes. Values: how to read the reduction length from the arguments.
def _mm_k(args: tuple, kwargs: dict) -> int:
    return int(args[-1].shape[-2]) if args[-1].dim() >= 2 else int(args[-1].shape[0])


def _conv_k(args: tuple, kwargs: dict) -> int:
    """Terms per output: C_in/groups * kernel volume (for a transposed convolution, an upper
    bound: every input channel times the kernel volume)."""
    weight = args[1]
    transposed = len(args) > 6 and bool(args[6])
    groups = int(args[8]) if len(args) > 8 else 1
    in_per_group = weight.shape[0] // groups if transposed else weight.shape[1]
    return int(in_per_group * math.prod(weight.shape[2:]))


def _reduced_count(args: tuple, kwargs: dict) -> int:
    x = args[0]
    dims = args[1] if len(args) > 1 else kwargs.get("dim")
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return max(1, x.numel())
    if isinstance(dims, int):
        dims = [dims]
    return max(1, math.prod(int(x.shape[d]) for d in dims))


def _dim_size(args: tuple, kwargs: dict) -> int:
    x, dim = args[0], args[1] if len(args) > 1 else kwargs.get("dim", -1)
    return int(x.shape[dim]) if x.dim() else 1


CONTRACTIONS: dict[Any, Callable[[tuple, dict], int]] = {
    aten.mm.default: _mm_k,
    aten.bmm.default: _mm_k,
    aten.addmm.default: _mm_k,
    aten.baddbmm.default: _mm_k,
    aten.addbmm.default: _mm_k,
    aten.mv.default: lambda a, k: int(a[1].shape[0]),
    aten.dot.default: lambda a, k: int(a[0].shape[0]),
    aten.convolution.default: _conv_k,
    aten.sum.dim_IntList: _reduced_count,
    aten.sum.default: _reduced_count,
    aten.mean.dim: _reduced_count,
    aten.mean.default: _reduced_count,
    aten.cumsum.default: _dim_size,
}

# The contractions that add their operands' elements, with no product: a complex term adds
# one value to each component, of size at most its modulus.
SUMS = {aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default,
        aten.cumsum.default}

# A complex product ab = (ar br - ai bi) + i (ar bi + ai br) is two real products per
# component, so a contraction of complex operands of length K sums 2K real products in each
# component; their sizes |ar br| + |ai bi| and |ar bi| + |ai br| are at most |a| |b|
# (Cauchy-Schwarz), so the contraction of the operands' moduli, |A| @ |B|, bounds each
# component's sum of |terms|. (A real operand has one product per component, so this counts
# a mixed product at most twice over.)
COMPLEX_PRODUCT_TERMS = 2


class Spectral(NamedTuple):
    """A discrete Fourier transform of torch.fft (aten's _fft_r2c, _fft_c2c, _fft_c2r: self,
    dim, normalization, a last argument): how long its signal is, how many real products a
    term makes in each output component, and how many times an input element enters |F| M."""

    length: Callable[[tuple], int]
    products: int
    hermitian: int


# Each output of a DFT of length n is sum_j x_j w^(jk), |w| = 1, times the normalisation
# the op applies (args[2]: 0 none, 1 by 1/sqrt(n), 2 by 1/n), so |F| M = (sum_j M_j) times
# it at every output: the componentwise bound of the direct sum, whose error no order beats
# by more than the sqrt(N) model allows. A fast transform errs less: log2 n stages of one
# rotation each (Higham, 2nd ed., Thm 24.2: normwise log2(n) eta ||y||, eta ~ (4 sqrt(2) + 1) u),
# independent errors of about sqrt(log2 n) eta ||x||_2 <= sqrt(log2 n) eta sum_j |x_j| per
# element. A c2r transform reads the half spectrum and its Hermitian mirror, each input
# element up to twice (`hermitian`). Depth: each output component sums n terms of `products`
# real products (a real x_j times w: one; a complex one: two, Re(X w) = Xr wr - Xi wi), and
# every term carries its twiddle factor's own rounding (|w^ - w| <= u for factors computed
# in the working precision or finer), one more factor on every term's chain: products * n +
# 1, as a dot product of length m is depth m.
SPECTRAL: dict[Any, Spectral] = {
    aten._fft_r2c.default: Spectral(lambda a: math.prod(a[0].shape[d] for d in a[1]), 1, 1),
    aten._fft_c2c.default: Spectral(lambda a: math.prod(a[0].shape[d] for d in a[1]), 2, 1),
    aten._fft_c2r.default: Spectral(lambda a: math.prod(a[0].shape[d] for d in a[1][:-1])
                                    * int(a[3]), 2, 2),
}


def _spectral_magnitude(func, args: tuple, magnitude: torch.Tensor, out: torch.Tensor
                        ) -> torch.Tensor:
    """|F| M of a transform (SPECTRAL): the input's magnitudes summed over the signal's
    dims, times the normalisation and the Hermitian count, at every output element."""
    spectral = SPECTRAL[func]
    n = max(1, spectral.length(args))
    norm = {0: 1.0, 1: n ** -0.5, 2: 1.0 / n}[int(args[2])]
    total = magnitude.sum(dim=[int(d) for d in args[1]], keepdim=True) if magnitude.dim() \
        else magnitude
    return (spectral.hermitian * norm * total).expand(out.shape)


# Views between a complex tensor and its components (torch.view_as_real: a trailing dim of
# 2). A complex magnitude bounds the modulus of the error, so each component's error too;
# components whose errors are each within M_r and M_i make a complex error of modulus at most
# hypot(M_r, M_i). The conjugate view negates the imaginary component: the same modulus
# (aten's _conj, which autograd's complex multiply takes in its backward, raises on the real
# magnitude itself).
COMPONENT_VIEWS: dict[Any, Callable[[torch.Tensor], torch.Tensor]] = {
    aten.view_as_real.default: lambda m: m.unsqueeze(-1).expand(*m.shape, 2),
    aten.view_as_complex.default: lambda m: torch.hypot(m[..., 0], m[..., 1]),
    aten._conj.default: lambda m: m,
}

# Reductions traced by finite differences whose depth is the length of the reduced axis.
AXIS_REDUCTIONS: dict[Any, Callable[[tuple, dict], int]] = {
    aten._softmax.default: _dim_size,
    aten._safe_softmax.default: _dim_size,
    aten._log_softmax.default: _dim_size,
    aten.logsumexp.default: _reduced_count,
    aten.native_layer_norm.default: lambda a, k: max(1, math.prod(a[1])),
    aten.var.correction: _reduced_count,
    aten.std.correction: _reduced_count,
    aten.var_mean.correction: _reduced_count,
    aten.linalg_vector_norm.default: lambda a, k: _reduced_count((a[0], a[2] if len(a) > 2 else None), {}),
    aten.cumprod.default: _dim_size,
    aten.logcumsumexp.default: _dim_size,  # a scan: its last output reads the whole axis
    # torch.cdist: each distance sums the feature axis (directly, or as |x|^2 + |y|^2 - 2 x.y
    # through a matmul above 25 rows); counted by the default rule, inputs over outputs, a
    # 256 x 300 table of 64 features was depth 1
    aten._cdist_forward.default: lambda a, k: int(a[0].shape[-1]),
    aten._euclidean_dist.default: lambda a, k: int(a[0].shape[-1]),
}

def _degrees_of_freedom(args: tuple, kwargs: dict) -> float:
    """What a variance divides its sum of squared deviations by: n - correction, at least 1."""
    correction = kwargs.get("correction")
    return max(1.0, _reduced_count(args, kwargs) - (1 if correction is None else
                                                    float(correction)))


def _is_two_norm(args: tuple) -> bool:
    """Whether aten.linalg_vector_norm's arguments ask for the 2-norm (its default order)."""
    return (float(args[1]) if len(args) > 1 else 2.0) == 2.0


def _squared_deviations(args: tuple, kwargs: dict, var: torch.Tensor) -> torch.Tensor:
    """Welford's M2, the two-pass sum of squared deviations: var * (n - correction)."""
    return var * _degrees_of_freedom(args, kwargs)


# Reductions every algorithm computes through a sum of squares, and that sum from the op's
# (first) result: the variance's M2 (Welford's, or the two-pass sum of squared deviations)
# and the 2-norm's squared norm. It is on the chain behind the result: where it leaves the
# format's range an honest evaluation in the format overflows, though the result is in range
# (std of values near 1e19 in fp32: each square near 1e38, their sum past 3.4e38).
SUMMED_SQUARES: dict[Any, Callable[[tuple, dict, torch.Tensor], torch.Tensor | None]] = {
    aten.var.correction: _squared_deviations,
    aten.var_mean.correction: _squared_deviations,
    aten.std.correction: lambda a, k, std: _squared_deviations(a, k, std * std),
    aten.linalg_vector_norm.default: lambda a, k, norm: norm * norm if _is_two_norm(a) else None,
}

_FD_STEP = 2.0 ** -20  # central-difference step relative to the operand's magnitude

# A product with, or a quotient by, a power of two given as a number changes the exponent
# alone: exact in every binary format (below the smallest normal it rounds, but correctly, so
# every IEEE implementation alike, and a flush to zero is EXC-02's). No rounding step then,
# so round(x * 4) at an input's exact tie is judged as round(x) is.
POWER_OF_TWO_SCALINGS = {aten.mul.Tensor: (0, 1), aten.mul.Scalar: (0, 1),
                         aten.div.Tensor: (1,), aten.div.Scalar: (1,)}


def _scales_by_a_power_of_two(func, args: tuple) -> bool:
    """Whether the op multiplies or divides by a number (at a position POWER_OF_TWO_SCALINGS
    admits) that is a power of two."""
    for i in POWER_OF_TWO_SCALINGS.get(func, ()):
        if i < len(args) and isinstance(args[i], (int, float)) \
                and not isinstance(args[i], bool) and math.isfinite(args[i]) and args[i] != 0 \
                and math.frexp(abs(args[i]))[0] == 0.5:
            return True
    return False


# Ops that return the logarithm of a sum they compute (log S, S = sum exp(x - max) >= 1):
# S rounded with relative error d gives log S an absolute error |log(1 + d)| ~ |d|, whatever
# the output's own size. At a row's maximum, log_softmax is -log S ~ 0 and its derivative
# along the inputs' magnitudes ~ 0, so without this unit term the bound there fell below the
# half-ulp error of S itself. Each output element's scale gains 1 (the depth already counts
# the N additions that make S). logcumsumexp is log S_k for each prefix; a scan of
# logaddexp(a, b) = max + log1p(exp(-|a - b|)) rounds log1p at the scale of 1 at each step.
# logaddexp itself is one such step, S = 1 + exp(-|a - b|) in (1, 2]: where max + log S
# cancels (a = b = -0.69 gives about 0) the result keeps log S's absolute error, u at the scale
# of 1, whatever its own size: an fp32 log(exp(a - m) + exp(b - m)) + m (vLLM's merge of
# attention states) erred by 4.53x and 197x of a bound at the result's scale, and torch's own
# fp32 logaddexp by up to 4.2e-8 at results near 0. In base 2, log2(1 + d) ~ d / ln 2: the
# scale gains 1 / ln 2. Values: the unit term each op's scale gains.
LOG_OF_SUM = {aten._log_softmax.default: 1.0, aten.logsumexp.default: 1.0,
              aten.logcumsumexp.default: 1.0, aten.logaddexp.default: 1.0,
              aten.logaddexp2.default: 1 / math.log(2)}

# Normalisations an honest kernel may form from the row's log-sum-exp, rounded: log_softmax as
# x - lse, softmax as exp(x - lse) (flash attention's stored lse, a fused cross entropy). The
# rounding of lse, u |lse| <= u (max_j M_j + log N), enters log_softmax absolutely and
# softmax relative to its value, at every element of the row: at a row's maximum both are
# flat along the inputs' magnitudes, and the max-subtracted reference never rounds at that
# scale. Values: whether the term is relative to the output (softmax) or absolute.
ROUNDED_LSE = {aten._log_softmax.default: False, aten._softmax.default: True,
               aten._safe_softmax.default: True}

# Elementwise functions whose standard formula cancels in a tail: GELU is 0.5 x (1 + erf(x /
# sqrt 2)) (or 1 + tanh(...)), and 1 + erf is rounded at the scale of 1 where erf -> -1, an
# absolute error u that 0.5 x carries into the output: 0.5 |x| u where the output itself is
# ~1e-16 (every library evaluates it so, torch's own included). Its backward,
# grad (Phi(x) + x phi(x)) with Phi = 0.5 (1 + erf), errs so by 0.5 |grad| u. Values: the factor
# of the first operand's magnitude (x; for the backward, grad) the scale gains.
TAIL_CANCELLATION = {aten.gelu.default: 0.5, aten.gelu_backward.default: 0.5}

# SiLU as every library writes it, x s, and its backward, grad s (1 + x (1 - s)), with
# s = sigmoid(x) rounded first. The backward takes the exact 1 - s, and x multiplies s's
# rounding, up to u s, into a result the function itself is flat at (s -> 1): torch's own
# erred by 11 u of its output at x = 11.7, 1.4x its bound, and inputs x 1000 left CMP-01's
# trials under-specified; the scale gains |grad| s^2 |x|. Where s lies below the smallest
# normal (x < -87 in fp32: exp(-x) overflows and s is 0) it errs by up to that
# (_underflowed), which d out / d s carries into a result that may be normal: x for SiLU
# (silu(-88.9) = -2.2e-37, fp32's 0), grad (1 + x - 2 x s) for its backward.
SILU = {aten.silu.default, aten.silu_backward.default}

# Special functions no library rounds correctly: the CUDA C++ Programming Guide's table of
# single-precision functions gives their maximum errors in ulps (lgammaf 6 outside
# [-10.001, -2.264], erfinvf 2, cyl_bessel_i0f and cyl_bessel_i1f 6), and torch's own
# implementations (Cephes' series) reach a few: fp32 i0 2.7 ulp, measured. An honest kernel
# calling such a library errs by that many ulps of its output: the output's scale gains that
# many times |out| beside the one rounding every elementwise op is allowed.
LIBRARY_ULPS = {aten.lgamma.default: 6, aten.erfinv.default: 2, aten.i0.default: 6,
                aten.special_i0e.default: 6, aten.special_i1.default: 6,
                aten.special_i1e.default: 6}

# Square roots of a sum of squares (std, the 2-norm): each square of gradual underflow errs
# by up to half the smallest subnormal s, absolutely (IEEE 754: fl(ab) = ab(1 + d) + e,
# |e| <= s / 2), so the sum by n s / 2 (over n - correction for std), and sqrt(v + e) - sqrt(v)
# <= sqrt(e): a result below sqrt(n s / 2) is what every evaluation in the format may give as
# 0 (fp32: 2.6e-23 for std over 300; torch's own std on CUDA gives 0 for deviations near
# 1e-39, its CPU std, accumulating in float64, 1.5e-39). First order has the sqrt's slope at
# the exact sum instead, which misses it where the squares underflow.
def _rooted_underflow(func, args: tuple, kwargs: dict, dtype: torch.dtype) -> float | None:
    if func is aten.std.correction:
        terms = AXIS_REDUCTIONS[func](args, kwargs) / _degrees_of_freedom(args, kwargs)
    elif func is aten.linalg_vector_norm.default and _is_two_norm(args):
        terms = AXIS_REDUCTIONS[func](args, kwargs)
    else:
        return None
    finfo = torch.finfo(dtype)
    return math.sqrt(terms * finfo.tiny * finfo.eps / 2)


# Products of two computed tensors: beside first order's |a| M_b + |b| M_a, each factor's
# error times the other's (tolerance.second_order), which is all there is where both cancelled.
# A square is the product of its operand with itself: (x - mean)^2 at x = mean.
PRODUCTS = {aten.mul.Tensor, aten.mul_.Tensor}
SQUARES = {aten.pow.Tensor_Scalar, aten.pow_.Scalar}  # torch.square is pow(x, 2)

# Backwards whose result is a difference of terms that cancel for some cotangents, traced as
# their formulas written out (each module says why): the finite differences took |J M| along
# each operand's magnitudes, which cancels where the result does, and bounded an honest
# kernel's rounding of the cancelling terms by almost nothing.
WRITTEN_OUT = {**softmax_backward.FORMULAS, **normalisation_backward.FORMULAS}

# x mod p = x - n p, n an integer constant between wraps (floor(x / p) for remainder, its
# truncation for fmod): slope 1 in x and -n in p wherever it is continuous, so the result's
# magnitude is |out| + M_x + |n| M_p. A central difference across a wrap measured the jump
# instead (2 pi over a step of 2^-20 M: 3.3e6 from an angle of 2 pi) or, with a step near a
# period, nothing at all: a Mamba-3 angle state whose walk had passed 2 pi (the error of
# 2 pi + a turn is a rounding at 2 pi) kept the magnitude of its last few turns, 1e-17.
REMAINDERS = {aten.remainder.Tensor, aten.remainder.Scalar, aten.remainder_.Tensor,
              aten.remainder_.Scalar, aten.fmod.Tensor, aten.fmod.Scalar, aten.fmod_.Tensor,
              aten.fmod_.Scalar}


def _remainder_magnitude(flat: list, known: list, out: torch.Tensor) -> torch.Tensor:
    """|out| + M_x + |n| M_p of out = x mod p (REMAINDERS): `flat` the operands before the op
    ran, `known` their traces (None for a number)."""
    total = own_scale(out)
    if known[0] is not None:
        total = total + known[0].magnitude.to(total.device)
    x, p = flat[0], flat[1]
    if isinstance(p, torch.Tensor) and known[1] is not None:
        turns = torch.nan_to_num(((x.detach() - out.detach()) / p.detach()).round().abs(),
                                 nan=0.0, posinf=0.0)
        total = total + turns * known[1].magnitude.to(total.device)
    return total


# Sign pattern of the second direction the finite differences of a mixing op take (below).
_SIGNS_SEED = 20261203


def _positions_over(shape: tuple[int, ...], dims: list[int]) -> torch.Tensor:
    """Each element's row-major index over `dims` alone: its position within the group of
    elements that differ only along those dims."""
    pos = torch.zeros(shape, dtype=torch.int64)
    stride = 1
    for d in sorted({d % len(shape) for d in dims}, reverse=True):
        along = [-1 if e == d else 1 for e in range(len(shape))]
        pos = pos + torch.arange(shape[d]).view(along) * stride
        stride *= shape[d]
    return pos


def _reduced_dims(x: torch.Tensor, dims: Any) -> list[int]:
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(x.dim()))
    return [dims] if isinstance(dims, int) else list(dims)


def _group_norm_groups(a: tuple, k: dict) -> torch.Tensor:
    n, c, inner, groups = int(a[3]), int(a[4]), int(a[5]), int(a[6])
    return _positions_over((n, groups, c // groups * inner), [2]).reshape(a[0].shape)


def _batch_norm_groups(a: tuple, k: dict) -> torch.Tensor | None:
    training = bool(a[5]) if len(a) > 5 else bool(k.get("training"))
    if not training:
        return None  # normalised by the running statistics: nothing mixes
    return _positions_over(tuple(a[0].shape), [0, *range(2, a[0].dim())])


# Mixing ops whose first operand falls into groups, each read by the outputs of one group
# only (a GroupNorm's groups, a softmax's rows): per element of that operand, its position
# within its group. Used to take the mean square of the propagated operand error exactly
# (`_hadamard`, in `_finite_difference`).
GROUPED_OPERAND: dict[Any, Callable[[tuple, dict], torch.Tensor | None]] = {
    aten.native_group_norm.default: _group_norm_groups,
    aten.native_layer_norm.default: lambda a, k: _positions_over(
        tuple(a[0].shape), list(range(a[0].dim() - len(a[1]), a[0].dim()))),
    aten.native_batch_norm.default: _batch_norm_groups,
    aten._softmax.default: lambda a, k: _positions_over(tuple(a[0].shape), [a[1]]),
    aten._safe_softmax.default: lambda a, k: _positions_over(tuple(a[0].shape), [a[1]]),
    aten._log_softmax.default: lambda a, k: _positions_over(tuple(a[0].shape), [a[1]]),
    aten.var.correction: lambda a, k: _positions_over(
        tuple(a[0].shape), _reduced_dims(a[0], a[1] if len(a) > 1 else k.get("dim"))),
    aten.var_mean.correction: lambda a, k: _positions_over(
        tuple(a[0].shape), _reduced_dims(a[0], a[1] if len(a) > 1 else k.get("dim"))),
    aten.std.correction: lambda a, k: _positions_over(
        tuple(a[0].shape), _reduced_dims(a[0], a[1] if len(a) > 1 else k.get("dim"))),
}

# Largest group whose mean square is probed exactly: 2 * PROBED_GROUP evaluations of the op
# (a Hadamard pattern per group position, two for each central difference). Above it one
# random sign pattern s samples the mean square, which for a normalisation of n elements is
# sigma^-1 (s_i M_i (1 - 1/n) - sum_{j != i} s_j M_j / n - z_i mean(z s M)): with equal
# magnitudes it falls below 1/8 of its root mean square only when at most n/16 of the other
# n - 1 signs differ from s_i, a chance of P(Binomial(63, 1/2) <= 3) = 4.5e-15 at n = 64,
# under the 2.5e-14 per element that LAMBDA (tolerance.py) admits.
PROBED_GROUP = 64


def _is_inexact(x: Any) -> bool:
    """A floating or complex tensor: what the oracle evaluates in double precision."""
    return isinstance(x, torch.Tensor) and inexact(x)


def _double(dtype: torch.dtype) -> torch.dtype:
    """The double-precision format of a floating or complex one: float64, complex128."""
    return torch.complex128 if dtype.is_complex else torch.float64


class Alternatives(NamedTuple):
    """Other values an honest working-precision run may give a floating tensor
    (MagnitudeTracer.alternatives)."""

    values: list[torch.Tensor]
    # whether they hold every value its open elements (read at open picks) may take
    picks_complete: bool


# Ops each of whose output elements reads an operand at the same element of an index operand:
# taken again at each other pick of a decision's index, they give every value an element
# read at an open pick may hold (MagnitudeTracer._read_at_picks).
PICK_READS = {aten.gather.default}


class Traced(NamedTuple):
    """What the trace knows of one tensor."""

    magnitude: torch.Tensor
    depth: int
    # 0-d: the largest magnitude on the chain behind it, each tensor's as a share of the
    # largest finite value of its own format (past 1: something behind it overflowed)
    peak: torch.Tensor
    stored: torch.dtype  # its format in the working-precision run
    quantization: float  # sum of unit roundoffs of the coarse storage roundings behind it


def _requested_float(kwargs: dict) -> torch.dtype | None:
    """The floating or complex `dtype=` an op is asked for, other than double precision
    (None if none)."""
    dtype = kwargs.get("dtype")
    if isinstance(dtype, torch.dtype) and (dtype.is_floating_point or dtype.is_complex) \
            and dtype != _double(dtype):
        return dtype
    return None


def _promoted(operands: list[tuple[torch.Tensor, torch.dtype]]) -> torch.dtype:
    """The stored format of an op's result, by torch's promotion of its floating operands'
    stored formats: dimensioned tensors decide over 0-d ones. Torch promotes no fp8 format
    with another; a reference cannot mix them, and the finer is taken."""
    pool = [d for t, d in operands if t.dim() > 0] or [d for _, d in operands]
    result = pool[0]
    for d in pool[1:]:
        try:
            result = torch.promote_types(result, d)
        except RuntimeError:
            result = min((result, d), key=unit_roundoff)
    return result


class MagnitudeTracer(EagerDispatchMode):
    """Runs float64 code and records, per produced tensor, its magnitude, depth, stored
    format and quantization."""

    def __init__(self, magnitudes: bool = True, arithmetic: torch.dtype = torch.float32,
                 trusting: bool = False) -> None:
        super().__init__()
        # Trusting: a traced entry is used without first reading its fingerprint check back
        # to the host (a synchronisation per traced operand on a GPU); the checks are or-ed
        # into one device flag instead, read once by `trusted_a_stale_entry`.
        self.trusting = trusting
        self._stale: torch.Tensor | None = None
        # Storage roundings to formats no coarser than the arithmetic are the arithmetic's
        # own roundings, which the depth already counts.
        self.arithmetic_u = unit_roundoff(arithmetic)
        # Without magnitudes only depths are traced (|out| stands in for the scale): what a
        # gate needs that only asks how long a reduction is.
        self.magnitudes = magnitudes
        # Keyed by where the data lives, not by Python object: autograd hands the backward
        # pass other tensor objects over the same memory. Entries hold their tensor, so no
        # address is reused while the trace lives, and a fingerprint of its bits, so that an
        # entry is not trusted once something the tracer cannot see wrote there (a
        # reference's own kernel; Triton's interpreter copying its results back). Beside the
        # magnitude and depth: the peak, the largest magnitude of any tensor on the chain of
        # operations behind it (a 0-d tensor), which says whether an intermediate left the
        # working format's range where the output's own magnitude does not (sigmoid(conv)).
        self._entries: dict[tuple, tuple[torch.Tensor, Traced, torch.Tensor]] = {}
        # Memory a factory made in a format the trace declares nothing for (the arithmetic's:
        # `torch.empty_like(x)` of fp32 x), keyed and checked as the entries are: a write into
        # a view of it, before anything unseen wrote there, starts its trace.
        self._made: dict[tuple, tuple[torch.Tensor, bool, torch.Tensor]] = {}
        self.arithmetic = arithmetic
        # In the backward pass (run_oracle's gradients): a kink's subgradient is open (kinks.py)
        self.differentiating = False
        # Per ReLU result, where its input met 0: autograd's ReLU backward reads the result
        # alone, 0 at every input that was not positive, kink or not.
        self._relu_inputs: dict[tuple, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        # Per comparison mask of the forward of a backward problem, where its sides met.
        self._forward_kinks: dict[tuple, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        # What the trace knows of integer tensors, keyed and checked as the entries are:
        # where a decision's index is a near tie (an infinite magnitude), where a rounding
        # to an integer may land a step away (STEPS: the step's magnitude), 0 elsewhere.
        self._integers: dict[tuple, tuple[torch.Tensor, IntegerTrace, torch.Tensor]] = {}
        # Floating tensors whose values are integers by construction (a rounding's result,
        # clamped, moved): exact but for the steps they carry, which a cast to an integer
        # format keeps (it does not truncate them a step lower).
        self._integral: dict[tuple, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        # Other values an honest working-precision run may give a floating tensor where some
        # element's class differs from the float64 one (accumulation.py: a running product's
        # accumulator leaving the format's range), and what is computed from them.
        self._alternatives: dict[tuple, tuple[torch.Tensor, Alternatives, torch.Tensor]] = {}
        # one step of an integer, as a magnitude (step_magnitude)
        self._step_unit = step_magnitude(1.0, arithmetic)
        # set by an interrupted wait for the backward (input_gradients_interruptibly)
        self.abandoned = False

    @staticmethod
    def _key(t: torch.Tensor) -> tuple:
        # a conjugate view (x.conj()) shares x's storage, offset, shape and strides
        return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape),
                t.stride(), t.dtype, t.is_conj())

    def record(self, t: torch.Tensor, traced: Traced) -> None:
        self._entries[self._key(t)] = (t, traced, _fingerprint(t))

    def declare(self, t: torch.Tensor, stored: torch.dtype) -> None:
        """An input or parameter (upcast to float64) stored as `stored` in the working run."""
        if self.coarse(stored):
            own = own_scale(t, may_read=not self.trusting)
            self.record(t, Traced(own, 0, self.share_of_range(own, stored), stored, 0.0))

    def coarse(self, stored: torch.dtype) -> bool:
        return unit_roundoff(stored) > self.arithmetic_u

    def share_of_range(self, t: torch.Tensor, stored: torch.dtype) -> torch.Tensor:
        """The largest of `t` (magnitudes of a tensor stored as `stored`; _largest) as a share
        of the largest finite value that tensor can hold in the working run: its own format's
        where that is coarser than the arithmetic, else the arithmetic's (the trace holds those
        in float64). An fp32 score behind an fp16 output overflows past fp32's range, not
        fp16's."""
        held = stored if self.coarse(stored) else self.arithmetic
        return _largest(t) / torch.finfo(held).max

    def working_format(self, t: torch.Tensor) -> torch.dtype:
        """The format the working run stores `t` in where the trace keeps one coarser than the
        arithmetic (an fp16 input, a cast's target), else `t`'s own: what a reference reading
        `t.dtype` asks for (working_formats). Whatever wrote `t` since: a write keeps a
        tensor's format."""
        entry = self._entries.get(self._key(t))
        return entry[1].stored if entry is not None and self.coarse(entry[1].stored) \
            else t.dtype

    def lookup(self, t: torch.Tensor) -> Traced:
        """What the trace knows of `t`; of an untraced tensor: its own |values|, stored as it
        is."""
        traced = self._read(self._entries, t)
        if traced is not None:
            return traced
        own = own_scale(t, may_read=not self.trusting)
        return Traced(own, 0, self.share_of_range(own, t.dtype), t.dtype, 0.0)

    def produced(self, t: torch.Tensor) -> bool:
        """Whether a traced operation (or a declaration) recorded `t` and nothing unseen wrote
        it since: what tells an output the trace followed from one a reference's own kernel
        wrote. Not its depth: an exact op (a product by a power of two, data movement) adds
        none, and its result is still traced. Trusting, an entry's being there is enough: its
        lookup already or-ed its staleness into the flag `trusted_a_stale_entry` reads."""
        if self.trusting:
            return self._key(t) in self._entries
        return self._read(self._entries, t) is not None

    def _read(self, table: dict, t: torch.Tensor) -> Any:
        """`t`'s entry in one of the tables, unless something wrote `t` since. Trusting, the
        entry whatever: whether it went stale is or-ed on the device into the flag
        `trusted_a_stale_entry` reads, not read back here."""
        entry = table.get(self._key(t))
        if entry is None:
            return None
        if self.trusting:
            stale = entry[2] != _fingerprint(t)
            self._stale = stale if self._stale is None else self._stale | stale
            return entry[1]
        return entry[1] if torch.equal(entry[2], _fingerprint(t)) else None

    def integer(self, t: torch.Tensor) -> IntegerTrace | None:
        """What the trace knows of the integer tensor `t` (None: exact everywhere)."""
        return self._read(self._integers, t)

    def _record_integer(self, t: torch.Tensor, trace: IntegerTrace) -> None:
        self._integers[self._key(t)] = (t, trace, _fingerprint(t))

    def integral_steps(self, t: torch.Tensor) -> torch.Tensor | None:
        """The steps a floating tensor of integers by construction carries (None: not one)."""
        return self._read(self._integral, t)

    def alternatives(self, t: torch.Tensor) -> Alternatives:
        """Other values an honest working-precision run may give the floating tensor `t`, each
        with some element of another class (finite, NaN, +-Inf) than `t`'s own; none where
        only the float64 one is known."""
        return self._read(self._alternatives, t) or Alternatives([], False)

    def _keep(self, o: torch.Tensor, others: list[torch.Tensor], picks_complete: bool) -> None:
        """Records `others` as `o`'s alternatives, those where some element's class differs
        from `o`'s: only the classes tell an alternative from the value."""
        kept = [a for a in others if bool((classes(a) != classes(o)).any())]
        if kept or picks_complete:
            self._alternatives[self._key(o)] = (o, Alternatives(kept, picks_complete),
                                                _fingerprint(o))

    def _read_at_picks(self, func, args: tuple, kwargs: dict, out: torch.Tensor) -> None:
        """A gather at a decision's index output (or a view of it: PICK_READS) reads, at each open
        element, whichever of its admissible picks an honest kernel took: taken again at each
        other pick (integers.admissible_picks), every value an open element may hold is among
        the results, so its classes are known in full there. Only where the gathered operand
        is itself known (no open element, no alternatives of its own)."""
        arguments = bound_arguments(func, args, kwargs)
        others = admissible_picks(self.integer(arguments["index"]))
        source = arguments["self"]
        if not others or self.alternatives(source).values \
                or bool(torch.isinf(self.lookup(source).magnitude).any()):
            return
        self._keep(out, [func(source, arguments["dim"], other) for other in others], True)

    def _keep_alternatives(self, func, args: tuple, kwargs: dict, flat: list, spec,
                           outs: list) -> None:
        """Records the alternatives of an op's floating outputs: a running product's own
        (RUNNING_PRODUCTS), and the op taken again with its operands' m-th alternatives in
        their place (an operand with fewer keeps its last)."""
        found: list[list[torch.Tensor]] = [[] for _ in outs]
        own = RUNNING_PRODUCTS.get(func)
        if own is not None:
            alternative = own(args, kwargs, self.arithmetic)
            if alternative is not None:
                found[0].append(alternative)
        # taken again, an op that writes an operand would write it again, a random one draw
        # anew; and while no tensor has alternatives, no operand has any to take it again with
        if self._alternatives and not func._schema.is_mutable \
                and torch.Tag.nondeterministic_seeded not in func.tags:
            known = {k: self.alternatives(a) for k, a in enumerate(flat) if _is_inexact(a)}
            operands = {k: alt.values for k, alt in known.items() if alt.values}
            # data movement of one operand keeps each element's value: its picks' classes stay
            # known in full where they were
            sole = [alt for alt in known.values() if alt.values or alt.picks_complete]
            complete = _is_data_movement(func) and len(known) == 1 and len(sole) == 1 \
                and sole[0].picks_complete and not any(
                    isinstance(a, torch.Tensor) and not _is_inexact(a)
                    and self.integer(a) is not None for a in flat)
            for m in range(max((len(others) for others in operands.values()), default=0)):
                shifted = [operands[k][min(m, len(operands[k]) - 1)] if k in operands else a
                           for k, a in enumerate(flat)]
                s_args, s_kwargs = spec.unflatten(shifted)
                try:
                    again = flatten(func(*s_args, **s_kwargs))[0]
                except RuntimeError:
                    continue
                for i, (o, o2) in enumerate(zip(outs, again)):
                    if _is_inexact(o) and isinstance(o2, torch.Tensor) and o2.shape == o.shape:
                        found[i].append(o2)
        else:
            complete = False
        for o, others in zip(outs, found):
            if _is_inexact(o) and (others or complete):
                self._keep(o, others, complete)

    def _keep_integral(self, func, args: tuple, kwargs: dict, flat: list, out: Any,
                       steps: torch.Tensor | None) -> None:
        """Marks the result of a rounding to integers (its `steps`), or of an op that keeps
        integers exact applied to such tensors (integers.carried), with the steps it carries."""
        if not isinstance(out, torch.Tensor) or not _is_inexact(out):
            return
        if func in INTEGRAL_STEPS:
            marked = steps if steps is not None else torch.zeros(out.shape, dtype=torch.float64,
                                                                  device=out.device)
        elif func is aten._to_copy.default:
            return  # a cast to another floating format may round the integers
        else:
            marked = carried(func, args, kwargs, flat, out, _is_data_movement(func),
                             self.integral_steps)
            if marked is None:
                return
        self._integral[self._key(out)] = (out, marked, _fingerprint(out))

    def worst_error(self, x: torch.Tensor, known: Traced) -> torch.Tensor:
        """The worst-case error of `x` in the working arithmetic: the rounding of every step
        of depth behind it, all of one sign, and the storage roundings, at its scale."""
        scale = known.magnitude.to(x.device) if self.magnitudes else own_scale(x)
        return scaled(per_unit_error(known.depth, self.arithmetic, BoundModel.WORST_CASE)
                      + known.quantization, scale)

    def relative_error(self, known: Traced) -> float:
        """tolerance.relative_error of a traced tensor, in the working arithmetic."""
        return relative_error(known.depth, self.arithmetic, known.quantization)

    def _second_order(self, args: tuple, known: list[Traced | None], device: torch.device
                      ) -> torch.Tensor | float:
        """A product's second-order scale (PRODUCTS) on the result's `device` (a 0-d CPU
        factor may multiply a CUDA one); 0 unless both factors are traced tensors (a Python
        number is exact)."""
        a, b = known[0], known[1] if len(known) > 1 else None
        if a is None or b is None or not all(isinstance(t, torch.Tensor) for t in args[:2]):
            return 0.0
        return second_order(self.relative_error(a), a.magnitude.to(device),
                            self.relative_error(b), b.magnitude.to(device))

    def _decide(self, func, args: tuple, kwargs: dict, out: Any) -> None:
        """Records the near ties of a decision's (or a max pool's) index output and the other
        picks they admit: the operand's worst-case error from its trace, at the working
        arithmetic and the depth behind it."""
        decision = DECISIONS.get(func, Decision(1))  # a pool: (values, indices)
        arguments = bound_arguments(func, args, kwargs)
        x = args[0]
        index = out if isinstance(out, torch.Tensor) else out[decision.index]
        known = self.lookup(x)
        if known.depth == 0 and known.quantization == 0.0:
            if decision.documented(arguments):
                return  # values read as they are stored: every implementation compares the same
            error = torch.zeros_like(x, dtype=torch.float64)  # only exact ties are open
        else:
            error = self.worst_error(x, known)
        if func in POOLS:
            ties, picks = pooled_picks(func, arguments, x, error, index)
        else:
            ties, picks = open_picks(x, error, index, arguments.get("dim"))
        self._record_integer(index, IntegerTrace(torch.where(ties, math.inf, 0.0).to(
            torch.float64), 1, picks if picks.count else None, picks_complete=True))

    def _steps(self, func, args: tuple, kwargs: dict, out: torch.Tensor) -> torch.Tensor | None:
        """The magnitude of what a step function (STEPS) of an operand `x` computed with
        rounding error may give beyond `out`, its exact result: f at the ends of x's
        worst-case error interval, less f(x), carried as step_magnitude; None where x is
        read as it is stored (every implementation rounds the same value)."""
        two = (func in COMPARISONS or func in BINARY_STEPS) and _is_inexact(args[1])
        own = self.integral_steps(args[0])
        if own is not None and not two and func not in COMPARISONS:
            # exact integers: a cast keeps them and the steps they carry (their range is the
            # reference's clamp's, which a step does not leave), but not a NaN or a value
            # the format does not hold
            undefined = undefined_cast(func, args[0], None, out)
            return own if undefined is None else torch.where(undefined.to(own.device),
                                                             math.inf, own)
        operands = args[:2] if two else args[:1]
        errors = []
        for x in operands:
            known = self.lookup(x)
            errors.append(None if known.depth == 0 and known.quantization == 0.0
                          else self.worst_error(x, known))
        undefined = undefined_cast(func, args[0], errors[0], out)
        if all(e is None for e in errors):
            if undefined is None or not bool(undefined.any()):
                return None
            return torch.where(undefined, math.inf, 0.0).to(torch.float64)
        exact = out.detach().to(torch.float64)
        reach = torch.zeros_like(exact)
        # every corner of the operands' error box: the step may lie in any direction
        for signs in itertools.product((1, -1), repeat=len(operands)):
            ends = [x.detach() if e is None else x.detach() + sign * e
                    for x, e, sign in zip(operands, errors, signs)]
            moved = func(*ends, *args[len(operands):], **kwargs).to(torch.float64)
            reach = torch.maximum(reach, torch.nan_to_num((moved - exact).abs(), nan=math.inf))
        # a non-finite result (round(NaN), floor(inf)) lies near no step: it is exact, as every
        # non-finite value is (own_scale), not a step of unknown size
        steps = step_magnitude(torch.where(torch.isfinite(exact), reach, 0.0), self.arithmetic)
        # a cast with no defined value there (undefined_cast): any integer is honest
        return steps if undefined is None else torch.where(undefined, math.inf, steps)

    def _at_kinks(self, func, args: tuple, steps: torch.Tensor | None) -> torch.Tensor | None:
        """`steps`, and in the backward pass how far another subgradient may lie where an
        operand meets a kink of the function differentiated (kinks.jump), as a step's
        magnitude: what the formula picks there is one honest choice among several."""
        if not self.differentiating:
            return steps
        jumped = kinks.jump(func, args, self._meets)
        if jumped is None:
            return steps
        kink = step_magnitude(jumped, self.arithmetic)
        return kink if steps is None else torch.maximum(steps, kink)

    def _flips(self, mask: torch.Tensor) -> torch.Tensor | None:
        """How far a mask may flip, as a step's magnitude (None: it may not): its steps (a
        comparison of computed values within their errors); in the backward pass also where
        it compared values meeting exactly (a piecewise function the reference wrote with
        `where`, differentiated through the forward's mask, at its kink)."""
        known = self.integer(mask)
        flips = None if known is None else known.magnitude
        kink = self._at_forward_kink(mask)
        if kink is None:
            return flips
        return kink if flips is None else torch.maximum(flips, kink)

    def _at_forward_kink(self, mask: torch.Tensor) -> torch.Tensor | None:
        """In the backward pass, where a forward mask compared values meeting exactly, as a
        step's magnitude (None: not such a mask, or not differentiating)."""
        at_kink = self._read(self._forward_kinks, mask) if self.differentiating else None
        return None if at_kink is None else step_magnitude(at_kink.to(torch.float64),
                                                           self.arithmetic)

    def _carry_forward_kink(self, func, args: tuple, out: torch.Tensor) -> None:
        """A forward mask cast to a floating format (`mask.float()`) keeps where its sides
        met: the reference multiplies by it as by the mask itself."""
        if func is not aten._to_copy.default or self.differentiating or \
                not torch.is_grad_enabled():
            return
        at_kink = self._read(self._forward_kinks, args[0])
        if at_kink is not None:
            self._forward_kinks[self._key(out)] = (out, at_kink, _fingerprint(out))

    def _mask_product(self, func, args: tuple) -> torch.Tensor | None:
        """How far a product with a forward mask at its kink (`_at_forward_kink`) may move in
        the backward pass, as a step's magnitude times the other factor: taking the other
        side turns `a * 0` into `a * 1` or back, so the product moves by |a| (`x * (x > 0)`
        differentiated: `g * mask`, open at x = 0 by |g|, as `where(mask, g, 0)` is by its
        operands' difference). A mask flipped near a tie is _moved_integers' already."""
        if func is not aten.mul.Tensor:
            return None
        for mask, other in (args[:2], args[1::-1]):
            flips = self._at_forward_kink(mask) if isinstance(mask, torch.Tensor) and \
                isinstance(other, torch.Tensor) else None
            if flips is not None:
                return _flipped(flips, other.detach().abs().to(torch.float64))
        return None

    def _silu_sigmoid(self, func, args: tuple, known: list, out: torch.Tensor) -> torch.Tensor:
        """What SiLU's or its backward's rounded (or underflowed) sigmoid adds to the scale
        (SILU)."""
        x = (args[0] if func is aten.silu.default else args[1]).detach().to(out.device)
        sig = torch.sigmoid(x)
        if func is aten.silu.default:
            return x.abs() * self._underflowed(sig)
        grad = known[0].magnitude.to(out.device)
        return grad * (sig ** 2 * x.abs() + (1 + x - 2 * x * sig).abs() * self._underflowed(sig))

    def _underflowed(self, sig: torch.Tensor) -> torch.Tensor:
        """Where a sigmoid lies below the arithmetic's smallest normal, what the library's
        may err by, as a step's magnitude: all of it, up to that smallest normal (1 / (1 +
        exp(-x)) with exp(-x) overflowed is 0; SILU)."""
        tiny = SMALLEST_NORMAL[self.arithmetic]
        return torch.where(sig < tiny, step_magnitude(tiny, self.arithmetic), 0.0)

    def _meets(self, x: Any, point: Any) -> torch.Tensor:
        """Where `x` meets a kink at `point` within both their worst-case errors; for a
        ReLU's result at 0, where the ReLU's input met 0 (`_relu_inputs`)."""
        at_zero = self._read(self._relu_inputs, x) if isinstance(x, torch.Tensor) else None
        if at_zero is not None and isinstance(point, (int, float)) and point == 0:
            return at_zero
        return kinks.within(x, point, self._reach(x) + self._reach(point))

    def _reach(self, x: Any) -> torch.Tensor | float:
        """x's worst-case error in the working arithmetic; 0 where it is read as stored."""
        if not _is_inexact(x):
            return 0.0
        known = self.lookup(x)
        if known.depth == 0 and known.quantization == 0.0:
            return 0.0
        return self.worst_error(x, known)

    def trusted_a_stale_entry(self) -> bool:
        """Whether a trusting lookup used an entry that something unseen had written over
        (where the checking lookup would have taken the tensor's own values)."""
        return self._stale is not None and bool(self._stale)

    def _known(self, flat: list) -> list[Traced | None]:
        return [self.lookup(a) if _is_inexact(a) else None for a in flat]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.abandoned:
            raise BackwardAbandoned("the oracle's judging was interrupted")
        kwargs = kwargs or {}
        requested = _requested_float(kwargs)
        if requested is not None:  # the cast the reference asks for, evaluated in float64
            kwargs = {**kwargs, "dtype": _double(requested)}
        if func in _LITERALS and _is_inexact(args[0]) and args[0].dtype != _double(args[0].dtype):
            out = args[0].to(_double(args[0].dtype))  # made in the default dtype, as the working run's
            self.declare(out, args[0].dtype)
            return out
        flat, spec = flatten((args, kwargs))
        float_args = [a for a in flat if _is_inexact(a)]
        if not float_args or _is_fill(func):
            # A factory: exact constants, or memory to be written (empty_like: what a
            # reference's own kernel writes there, no traced operation saw it be computed).
            write = self._integer_write(func, flat) if not float_args else None
            out = func(*args, **kwargs)
            if func.overloadpacket.__name__ in _EMPTY_NAMES:
                # what the allocator left there (another tensor's freed values) is nothing
                # of the reference's, and a peak or magnitude read from it would change from
                # run to run: zeros, in float64 as in every format
                for o in flatten(out)[0]:
                    if _is_inexact(o):
                        o.zero_()
            if not float_args and requested is None and _is_inexact(out) \
                    and out.dtype != _double(out.dtype):
                # torch's default dtype (no dtype= given): the working run's values, held in
                # float64 so that what is computed from them is too
                requested, out = out.dtype, out.to(_double(out.dtype))
            if not _is_fill(func):
                self._integer_op(func, args, kwargs, flat, spec, out, write)
                self._carry_forward_kink(func, args, out)
            stored = requested or (self.lookup(float_args[0]).stored if float_args else None)
            for o in flatten(out)[0]:
                if not _is_inexact(o):
                    continue
                if stored is not None and self.coarse(stored):
                    self.declare(o, stored)
                else:
                    self._made[self._key(o)] = (o, True, _fingerprint(o))
            return out
        # An op that writes into an operand (add_, out=) changes what it holds: its trace is
        # read, and for the finite differences its values kept, before the op runs.
        mutates = func._schema.is_mutable
        known = self._known(flat) if mutates else None
        # (asked only while the base has no entry of its own: its first traced write makes one,
        # and the fingerprint taken when it was made no longer holds after that seen write)
        into_made = mutates and _writes_first(func) and isinstance(flat[0], torch.Tensor) \
            and flat[0]._base is not None \
            and self._key(flat[0]._base) not in self._entries \
            and self._read(self._made, flat[0]._base) is not None
        written = WRITTEN_OUT[func](args) if func in WRITTEN_OUT else None
        differences = self.magnitudes and func not in CONTRACTIONS and func not in SPECTRAL \
            and written is None and not _is_data_movement(func)
        before = [_copy(a) for a in flat] if mutates and differences else flat
        draw = _Draw.before(func, flat, kwargs) if differences else None
        # before the op: an in-place ReLU writes its result over its input
        relu_kinks = self._meets(args[0], 0.0) if func in kinks.RELU and \
            torch.is_grad_enabled() else None
        out = func(*args, **kwargs)
        if func in DECISIONS or func in POOLS:
            self._decide(func, args, kwargs, out)
        if relu_kinks is not None:
            self._relu_inputs[self._key(out)] = (out, relu_kinks, _fingerprint(out))
        outs, _ = flatten(out)
        float_outs = [o for o in outs if _is_inexact(o)]
        if not float_outs:
            if is_step(func, out, kwargs):  # a rounding to an integer format
                steps = self._at_kinks(func, args, self._steps(func, args, kwargs, out))
                if steps is not None:
                    self._record_integer(out, IntegerTrace(steps, self.lookup(args[0]).depth + 1))
            if func in COMPARISONS and torch.is_grad_enabled() and not self.differentiating:
                # a mask the forward takes as decided, which its backward may take either way
                self._forward_kinks[self._key(out)] = (out, self._meets(*args[:2]),
                                                       _fingerprint(out))
            return out
        if known is None:
            known = self._known(flat)
        # What the result is computed from: not what an operand held before the op wrote it
        # over unread (an out= tensor, a copy's target, a random fill's), which can be
        # uninitialised memory, NaN bits and all.
        unread = _written_unread(func, args, kwargs)
        sources = [k for a, k in zip(flat, known) if k is not None and id(a) not in unread]
        depth_in = max((k.depth for k in sources), default=0)
        # (a 0-d CPU operand may meet CUDA ones)
        peaks = [k.peak.to(float_outs[0].device, torch.float64) for k in sources]
        if len(peaks) == 1:  # most ops: the largest of one is itself, no stack to reduce
            peak_in = peaks[0]
        else:
            peak_in = torch.stack(peaks).amax() if peaks else \
                torch.zeros((), dtype=torch.float64, device=float_outs[0].device)
        stored, rounds = self._stored(func, flat, known, float_outs, requested, unread)
        # Copies where the op writes: a stored magnitude (or one it views) is not overwritten.
        m_args = spec.unflatten([(_copy(k.magnitude) if mutates else k.magnitude)
                                 if k is not None else a for a, k in zip(flat, known)])
        # per output (by id): what steps and open picks allow beyond the rounding's scale
        allowance: dict[int, Any] = {}
        if not self.magnitudes:
            magnitudes = out
            local = self._local_depth(func, args, kwargs, float_args, float_outs)
        elif func in CONTRACTIONS:
            m_args = _abs_scalars(func, m_args)
            magnitudes = func(*m_args[0], **m_args[1])
            local = self._local_depth(func, args, kwargs, float_args, float_outs)
        elif func in SPECTRAL:
            magnitudes = _spectral_magnitude(func, args, known[0].magnitude, out)
            local = self._local_depth(func, args, kwargs, float_args, float_outs)
        elif written is not None:  # as its formula: the terms it subtracts (depth below)
            quantization = max(k.quantization for k in known if k is not None)
            magnitudes = written.magnitude(
                lambda t: self.lookup(t).magnitude, lambda t: self.lookup(t).depth,
                lambda depth: relative_error(depth, self.arithmetic, quantization))
        elif func in REMAINDERS:
            magnitudes = _remainder_magnitude(before, known, out)
            local = self._local_depth(func, args, kwargs, float_args, float_outs)
        elif _is_data_movement(func):
            magnitudes = COMPONENT_VIEWS[func](m_args[0][0]) if func in COMPONENT_VIEWS \
                else func(*m_args[0], **m_args[1])
            # a cast to a complex format moves a real magnitude into the real part
            magnitudes = tree_map(lambda m: m.abs() if isinstance(m, torch.Tensor)
                                  and m.is_complex() else m, magnitudes)
            local = 0
            self._keep_integral(func, args, kwargs, flat, out, None)
        else:
            local = self._local_depth(func, args, kwargs, float_args, float_outs)
            groups = GROUPED_OPERAND[func](args, kwargs) if func in GROUPED_OPERAND else None
            with draw if draw is not None else contextlib.nullcontext():
                magnitudes = _finite_difference(func, before, spec, known, out, mutates, draw,
                                                mixing=local > 1, groups=groups,
                                                trusting=self.trusting)
            if func in LOG_OF_SUM:
                unit = LOG_OF_SUM[func]
                magnitudes = tree_map(lambda m: m + unit if _is_inexact(m) else m, magnitudes)
            if func in LIBRARY_ULPS:
                magnitudes = magnitudes + LIBRARY_ULPS[func] * own_scale(out)
            underflow = _rooted_underflow(func, args, kwargs, self.arithmetic)
            if underflow is not None:
                magnitudes = magnitudes + step_magnitude(underflow, self.arithmetic)
            if func in TAIL_CANCELLATION:
                magnitudes = magnitudes + TAIL_CANCELLATION[func] * known[0].magnitude.to(
                    out.device)
            if func in SILU:
                magnitudes = magnitudes + self._silu_sigmoid(func, args, known, out)
            if func in PRODUCTS:
                magnitudes = magnitudes + self._second_order(args, known, out.device)
            elif func in SQUARES and args[1] == 2:
                magnitudes = magnitudes + self._second_order((args[0], args[0]), known[:1] * 2,
                                                             out.device)
            if func in ROUNDED_LSE and out.numel():  # an empty axis has no lse to round
                row = known[0].magnitude.to(out.device).amax(args[1], keepdim=True)
                magnitudes = magnitudes + (row * own_scale(out) if ROUNDED_LSE[func] else row)
            steps = self._steps(func, args, kwargs, out) if is_step(func, out, kwargs) else None
            steps = self._at_kinks(func, args, steps)
            if steps is not None:
                allowance[id(out)] = steps
            flips = self._flips(args[0]) if func is aten.where.self else None
            if flips is not None:  # a flipped mask picks the other operand
                allowance[id(out)] = allowance.get(id(out), 0.0) + _flipped(
                    flips, (args[1] - args[2]).abs())
            masked = self._mask_product(func, args)
            if masked is not None:  # a flipped 0/1 factor adds or drops the other one
                allowance[id(out)] = allowance.get(id(out), 0.0) + masked
            self._keep_integral(func, args, kwargs, flat, out, steps)
        if written is not None:  # the chains its formula puts together
            depth_in, local = 0, written.depth(lambda t: self.lookup(t).depth)
        m_outs, _ = flatten(magnitudes)
        # complex too: the depth-only trace keeps the op's own (complex) result as its magnitude
        m_float = [m for m in m_outs if isinstance(m, torch.Tensor) and _is_inexact(m)]
        for o, extra in zip(outs, self._moved_integers(func, flat, spec, outs)):
            if extra is not None:
                allowance[id(o)] = allowance.get(id(o), 0.0) + extra
        squares = SUMMED_SQUARES[func](args, kwargs, float_outs[0]) \
            if func in SUMMED_SQUARES and float_outs else None
        # A rounding into a coarse format's gradual underflow errs by up to its half spacing
        # (tolerance.underflow, u * tiny) whatever the value's size, which u * scale shrinks
        # below; as scale, the format's smallest normal number. Carried as any magnitude is,
        # past a widening cast (an fp8 value dequantized to fp32) and through later operations.
        underflow_scale = torch.finfo(stored[0]).tiny if rounds and self.magnitudes else 0.0
        moved = _is_data_movement(func)
        for o, m in zip(float_outs, m_float):
            if m.shape == o.shape:
                own = own_scale(o)
                magnitude = torch.maximum(m.abs(), own)
                # the peak is the size of what was computed: a step's or an open pick's
                # allowance, or an infinite magnitude carried from one (not judged there),
                # is no value that could leave the format's range; data movement computes
                # nothing, and what it adds is its values in their format (a cast to fp16
                # of an fp32 sqrt: not the error scale the sqrt's slope gave it)
                sized = own if moved else torch.where(torch.isfinite(magnitude), magnitude, own)
                peak = torch.maximum(peak_in, self.share_of_range(sized, stored[0]))
                if squares is not None and o is float_outs[0]:  # summed in the arithmetic
                    peak = torch.maximum(peak, self.share_of_range(squares, self.arithmetic))
                traced = Traced(magnitude + allowance.get(id(o), 0.0) + underflow_scale,
                                depth_in + local, peak, *stored)
                self.record(o, traced)
                if mutates and o._base is not None:
                    self._write_through(o, traced, into_made)
        self._keep_alternatives(func, args, kwargs, flat, spec, outs)
        if func in PICK_READS:
            self._read_at_picks(func, args, kwargs, out)
        return out

    def _write_through(self, view: torch.Tensor, written: Traced, into_made: bool) -> None:
        """A write into a view of a traced tensor (`out[s:e] = ...`, a reference filling its
        output request by request) changes the base too, whose entry would otherwise go stale
        and leave it untraced: the written region's magnitudes replace the base's there, and
        the base keeps the deeper chain and the larger quantization of the two. Memory a
        factory made untraced (`into_made`: in the arithmetic's own format, or with an input's
        dtype, float64 here; nothing unseen wrote it before) starts its trace so: left
        untraced, an output filled slice by slice was judged as one no traced operation
        produced, against its own size. Another untraced base (a reference's own kernel wrote
        it) stays untraced."""
        base = view._base
        entry = self._entries.get(self._key(base))
        if entry is not None:
            old = entry[1]
        elif into_made:  # its own values, as an untraced tensor's, no chain behind them
            old = Traced(own_scale(base), 0, torch.zeros((), dtype=torch.float64,
                                                         device=base.device),
                         written.stored, 0.0)
        else:
            return
        magnitude = _written_into_view(base, view, old.magnitude, written.magnitude)
        self.record(base, Traced(magnitude, max(old.depth, written.depth),
                                 torch.maximum(old.peak, written.peak.to(old.peak.device)),
                                 old.stored, max(old.quantization, written.quantization)))

    def _moved_integers(self, func, flat: list, spec, outs: list, in_place: bool = False
                        ) -> list[torch.Tensor | None]:
        """Per output (None: nothing moves it), the magnitude an op's integer operands give
        it where they are not exact: infinite where it was computed from an open pick (a
        gather at a near-tie index, a comparison with an expert's number), step_magnitude of
        how far it moves where it was computed from integers a rounding left a step away (a
        packing of nibbles, a product with a scale). Found by taking the op again with those
        operands moved, both ways: open indices to a neighbour inside the indices' own range
        (no lookup out of bounds, on any device), stepped integers by their steps, flipped
        masks; what changes, and by how much. `in_place`: as _derived_picks."""
        found: list[torch.Tensor | None] = [None] * len(outs)
        if (func._schema.is_mutable and not in_place) \
                or torch.Tag.nondeterministic_seeded in func.tags:
            return found  # taken again, it would write an operand again or draw anew
        for k, a in enumerate(flat):
            if not isinstance(a, torch.Tensor) or _is_inexact(a):
                continue
            trace = self.integer(a)
            if trace is None or not bool((trace.magnitude > 0).any()):
                continue
            magnitude = trace.magnitude.to(a.device)
            for where, picks in ((torch.isinf(magnitude), True),
                                 (torch.isfinite(magnitude) & (magnitude > 0), False)):
                if not bool(where.any()):
                    continue
                for moved in moves(a, where, magnitude / self._step_unit, picks, trace.picks):
                    again = [None] * len(outs)  # nothing known of it: infinitely far
                    if moved is not None:
                        shifted = list(flat)
                        shifted[k] = moved
                        try:
                            again = flatten(_taken_again(func, spec, shifted, in_place))[0]
                        except (RuntimeError, IndexError):
                            pass
                    for i, (o, o2) in enumerate(zip(outs, again)):
                        if not isinstance(o, torch.Tensor):
                            continue
                        apart = how_far(o, o2)
                        extra = (torch.where(apart > 0, math.inf, 0.0) if picks
                                 else step_magnitude(apart, self.arithmetic))
                        found[i] = extra if found[i] is None else torch.maximum(found[i], extra)
        return found

    def _integer_write(self, func, flat: list) -> _IntegerWrite | None:
        """Before an in-place op on integers (`out[r, :k] = picks`: a copy_ into a view;
        `mask.scatter_(1, picks, True)`) runs: its target as it holds then, with what the
        trace knows of it and of the base it views, where the op may carry steps or open
        picks into it or write over a traced base (None: nothing to carry)."""
        if not _writes_first(func) or not flat or not isinstance(flat[0], torch.Tensor):
            return None
        target = flat[0]
        base = target._base
        base_trace = self.integer(base) if base is not None else None
        if base_trace is None and not any(
                isinstance(a, torch.Tensor) and self.integer(a) is not None for a in flat):
            return None
        before = target.detach().clone()
        own = self.integer(target)
        if own is not None:
            self._record_integer(before, own)
        return _IntegerWrite(before, base_trace)

    def _integer_op(self, func, args: tuple, kwargs: dict, flat: list, spec, out: Any,
                    write: _IntegerWrite | None = None) -> None:
        """An op on integer tensors: the steps and open picks they carry move to its result,
        by the op's rule where it has one (integers.carried: data movement, a cast to a
        floating format as a dequantization, clamps, sums), else by taking it again with
        them moved (_moved_integers: a packing of nibbles, a lookup). An in-place op
        (`write`) is taken again on copies of its target as it was, and what it wrote into
        a view reaches the view's base."""
        if write is not None:
            flat = [write.before, *flat[1:]]
            args, kwargs = spec.unflatten(flat)
        # what the result is computed from: not a target the op writes over unread (copy_)
        unread = {0} if write is not None and func.overloadpacket.__name__ in _OVERWRITE_NAMES \
            else set()
        traces = [self.integer(a) for k, a in enumerate(flat)
                  if isinstance(a, torch.Tensor) and not _is_inexact(a) and k not in unread]
        depth = max((t.depth for t in traces if t is not None), default=None)
        if depth is None:
            if write is not None:
                self._write_integers_through(out, write.base_before)
            return  # every operand exact: so is the result

        def steps_of(t: torch.Tensor) -> torch.Tensor | None:
            trace = self.integer(t)
            return trace.magnitude if trace is not None else None

        in_place = write is not None
        if in_place and unread:  # a copy: the source's steps, where it lands
            source = [a for a in flat[1:] if isinstance(a, torch.Tensor)]
            moved = steps_of(source[0]) if len(source) == 1 else None
            moved = None if moved is None else moved.to(out.device).expand(out.shape).clone()
        else:
            moved = carried(func, args, kwargs, flat, out, _is_data_movement(func), steps_of,
                            unknown_exact=True)
        if moved is not None and _is_inexact(out):
            magnitude = torch.maximum(moved, out.detach().abs().to(torch.float64))
            self.record(out, Traced(magnitude, depth, self.share_of_range(out, out.dtype),
                                    out.dtype, 0.0))
        elif moved is not None:
            # moved alone, each element keeps its own pick's admissible values
            known = [t for t in traces if t is not None]
            self._record_integer(out, IntegerTrace(moved, depth, self._derived_picks(
                func, flat, spec, 0, in_place), picks_complete=_is_data_movement(func)
                and len(known) == 1 and known[0].picks_complete))
        else:
            outs = flatten(out)[0]
            for i, (o, extra) in enumerate(zip(outs, self._moved_integers(
                    func, flat, spec, outs, in_place))):
                if extra is not None and isinstance(o, torch.Tensor) and not _is_inexact(o) \
                        and bool((extra > 0).any()):
                    self._record_integer(o, IntegerTrace(extra, depth, self._derived_picks(
                        func, flat, spec, i, in_place)))
        if write is not None:
            self._write_integers_through(out, write.base_before)

    def _write_integers_through(self, view: torch.Tensor, base_before: IntegerTrace | None
                                ) -> None:
        """An in-place op on a view of an integer tensor (a reference filling its index output
        row by row) changes the base too, whose entry went stale with the write: the view's
        trace (None: exact) replaces the base's where the view lies, the m-th other picks
        likewise, and the base keeps the rest. A base traced before keeps its picks complete
        only where the view's are too."""
        base = view._base
        if base is None or base.dtype != view.dtype:  # a bit cast counts elements otherwise
            return
        written = self.integer(view)
        if written is None and base_before is None:
            return

        magnitude = _written_into_view(
            base, view, base_before.magnitude if base_before is not None else
            torch.zeros(base.shape, dtype=torch.float64),
            written.magnitude if written is not None else 0.0)
        old = base_before.picks if base_before is not None else None
        new = written.picks if written is not None else None
        picks = None
        if old is not None or new is not None:
            after = base.detach().clone()

            def nth(m: int) -> torch.Tensor:
                return _written_into_view(base, view, old.nth(m) if old is not None else after,
                                          new.nth(m) if new is not None
                                          else _view_region(after, base, view))

            picks = OpenPicks(max(p.count for p in (old, new) if p is not None), nth)
        complete = (base_before is None or base_before.picks_complete) \
            and (written is None or written.picks_complete)
        depth = max(t.depth for t in (base_before, written) if t is not None)
        self._record_integer(base, IntegerTrace(magnitude, depth, picks, complete))

    def _derived_picks(self, func, flat: list, spec, position: int, in_place: bool = False
                       ) -> OpenPicks | None:
        """The other values output `position` of an op on open picks may honestly hold: the
        op taken again with each operand's m-th other picks (None where no operand has open
        picks, or the op draws anew or writes an operand; `in_place`: `flat` holds the
        target of an in-place op as it was, and each taking writes a copy of it)."""
        if (func._schema.is_mutable and not in_place) \
                or torch.Tag.nondeterministic_seeded in func.tags:
            return None
        picks = {k: trace.picks for k, a in enumerate(flat)
                 if isinstance(a, torch.Tensor) and not _is_inexact(a)
                 and (trace := self.integer(a)) is not None and trace.picks is not None}
        if not picks:
            return None

        def nth(m: int) -> torch.Tensor:
            moved = [picks[k].nth(m) if k in picks else a for k, a in enumerate(flat)]
            return flatten(_taken_again(func, spec, moved, in_place))[0][position]

        return OpenPicks(max(p.count for p in picks.values()), nth)

    def _stored(self, func, flat: list, known: list[Traced | None], float_outs: list,
                requested: torch.dtype | None, unread: set[int]
                ) -> tuple[tuple[torch.dtype, float], bool]:
        """The stored format of the op's outputs and their quantization, and whether the op
        rounds into that format (a coarse one: its unit roundoff added). An op that writes
        into an operand keeps that operand's format; its sources are the other operands. A
        computing op rounds its result to the stored format; data movement (a cast, a copy)
        rounds only where the format is coarser than the finest source's. What an operand
        held before the op wrote it over unread (`unread`: a copy's target) is no part of
        the result's chain, so its roundings are not the result's."""
        written = {id(o) for o in float_outs}
        operands = [(a, k) for a, k in zip(flat, known) if k is not None]
        sources = [(a, k) for a, k in operands if id(a) not in written] or operands
        target = next((k.stored for a, k in operands if id(a) in written), None)
        stored = requested or target or _promoted([(a, k.stored) for a, k in sources])
        quantization = max((k.quantization for a, k in operands if id(a) not in unread),
                           default=0.0)
        rounds = self.coarse(stored) and (
            not _is_data_movement(func)
            or unit_roundoff(stored) > min(unit_roundoff(k.stored) for _, k in sources))
        return (stored, quantization + (unit_roundoff(stored) if rounds else 0.0)), rounds

    @staticmethod
    def _local_depth(func, args: tuple, kwargs: dict, float_args: list, float_outs: list
                     ) -> int:
        if _is_data_movement(func):
            return 0
        if func in CONTRACTIONS:
            products = func not in SUMS and any(a.is_complex() for a in float_args)
            return CONTRACTIONS[func](args, kwargs) * (COMPLEX_PRODUCT_TERMS if products else 1)
        if func in SPECTRAL:
            return SPECTRAL[func].products * SPECTRAL[func].length(args) + 1
        if func in AXIS_REDUCTIONS:
            return AXIS_REDUCTIONS[func](args, kwargs)
        if _scales_by_a_power_of_two(func, args):
            return 0
        biggest_in = max(a.numel() for a in float_args)
        smallest_out = min(max(1, o.numel()) for o in float_outs)
        return max(1, biggest_in // smallest_out)


def _flipped(flips: torch.Tensor, apart: torch.Tensor) -> torch.Tensor:
    """What a mask that may flip (`flips`: a step's magnitude, 0 where it may not) allows a
    result it selects or multiplies by, where flipping moves it by `apart`."""
    return torch.where((apart > 0) & (flips > 0), flips * apart, 0.0)


def _largest(t: torch.Tensor) -> torch.Tensor:
    """max |t| in float64 as a 0-d tensor (0 for an empty one), on t's device: no sync."""
    t = t.detach()
    if not t.numel():
        return torch.zeros((), dtype=torch.float64, device=t.device)
    return t.abs().amax().to(torch.float64)


def _fingerprint(t: torch.Tensor) -> torch.Tensor:
    """The sum of t's bit patterns as integers: changes with any write into t."""
    t = t.detach()
    if t.is_complex():  # its bits as stored: a conjugate view reads the same storage
        t = torch.view_as_real(t.conj() if t.is_conj() else t)
    bits = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[t.element_size()]
    return t.view(bits).sum()


def _copy(a: Any) -> Any:
    return a.detach().clone() if isinstance(a, torch.Tensor) else a


class _Draw:
    """The random-number state a random op (dropout's bernoulli_, rrelu's noise, rand_like)
    drew from, so that its finite differences are taken with the draw it made: with fresh
    draws, (f(x + hM) - f(x - hM)) / 2h is the difference of two masks over 2h, and the
    magnitude of a dropout's output came out 2^19 times its value (every bound after it as
    loose, and the check for a random reference, which compares two runs within such bounds,
    blind to the randomness)."""

    def __init__(self, generator: torch.Generator) -> None:
        self.generator = generator
        self.state = generator.get_state()

    @classmethod
    def before(cls, func, flat: list, kwargs: dict) -> "_Draw | None":
        """The op's generator and its state now, before the op runs; None for an op that
        draws nothing."""
        if torch.Tag.nondeterministic_seeded not in func.tags:
            return None
        generator = kwargs.get("generator")
        if generator is None:
            device = next(a.device for a in flat if isinstance(a, torch.Tensor))
            generator = (torch.cuda.default_generators[device.index if device.index is not None
                                                       else torch.cuda.current_device()]
                         if device.type == "cuda" else torch.default_generator)
        return cls(generator)

    def replay(self) -> None:
        self.generator.set_state(self.state)

    def __enter__(self) -> "_Draw":
        self.after = self.generator.get_state()
        return self

    def __exit__(self, *exc: object) -> None:
        # where the op itself left it: the reference draws on from there, as without the oracle
        self.generator.set_state(self.after)


def _rademacher(like: torch.Tensor) -> torch.Tensor:
    """A fixed pattern of +-1 in like's shape (drawn on the CPU: the same on every device)."""
    g = torch.Generator().manual_seed(_SIGNS_SEED)
    signs = torch.randint(0, 2, like.shape, generator=g, dtype=torch.int8)
    return (signs.to(device=like.device, dtype=like.dtype) * 2 - 1)


def _hadamard(positions: torch.Tensor, order: int, row: int) -> torch.Tensor:
    """Row `row` of the Sylvester-Hadamard matrix of `order` (a power of two), read at each
    element's position: H[p, c] = (-1)^popcount(p & c)."""
    bits = positions & row
    parity = torch.zeros_like(bits)
    for b in range(order.bit_length() - 1):
        parity ^= (bits >> b) & 1
    return 1 - 2 * parity


def _finite_difference(func, flat: list, spec, known: list, out: Any,
                       mutates: bool, draw: _Draw | None = None, mixing: bool = False,
                       groups: torch.Tensor | None = None, trusting: bool = False) -> Any:
    """|out| plus, per floating operand k, |J_k M_k| by a central difference. `flat` holds
    the operands as they were before the op ran; an op that writes into an operand gets
    fresh copies for each evaluation, so that neither the trace nor `flat` is written. A
    random op's evaluations replay its own draw (the caller holds `draw` open around them).

    A `mixing` op (each output reads several elements of an operand: norms, softmax,
    variance) also gets the root mean square of the propagated operand error: operand
    errors are independent, of size u*M_j each, so the output's error has the size
    r_i = sqrt(sum_j J_ij^2 M_j^2). |J_k M_k| alone cancels where the op is
    shift-invariant: a layer norm of inputs 1e6 +- 1 has J M ~ 1 (M ~ 1e6 in every
    direction but the mean's), while an fp32 evaluation carries ulp(1e6)/sigma from
    x - mean. Where the op's first operand falls into `groups` of at most PROBED_GROUP
    elements, r is exact: with the directions h_p * M_k, h_p the rows p < q of a
    Hadamard matrix of order q >= the group size read at each element's position in its
    group, sum_p (J h_p M)_i^2 = q sum_j J_ij^2 M_j^2, since within a group the columns
    are orthogonal and J_ij = 0 outside it. One random sign pattern s, whose |J (s M)| is
    a sample of r (its mean square over s is r^2), can vanish there: in a GroupNorm of 4
    channels after a matmul (M ~ 100, sigma ~ 60), an element near its group's mean whose
    group's signs agree got 1e-3 where r ~ 1.5, and the fp32 reference used 11x the
    bound. Larger groups, and the other operands, keep the one sample."""
    outs, out_spec = flatten(out)
    total = [own_scale(o, may_read=not trusting) if _is_inexact(o) else o for o in outs]
    for k, a in enumerate(flat):
        if not _is_inexact(a):
            continue
        m = known[k].magnitude
        # An operand of magnitude 0 adds nothing. Trusting, that is decided on the device
        # (its slopes taken and then dropped) rather than read back to the host.
        if trusting:
            before = list(total)
            _add_operand_slopes(func, flat, spec, k, a, m, mutates, draw, total, mixing, groups,
                                not trusting)
            adds = (m > 0).any()
            total[:] = [t if t is b else torch.where(adds, t, b) for t, b in zip(total, before)]
        elif bool((m > 0).any()):
            _add_operand_slopes(func, flat, spec, k, a, m, mutates, draw, total, mixing, groups,
                                not trusting)
    return out_spec.unflatten(total)


def _add_operand_slopes(func, flat: list, spec, k: int, a: torch.Tensor, m: torch.Tensor,
                        mutates: bool, draw: _Draw | None, total: list, mixing: bool,
                        groups: torch.Tensor | None, may_read: bool) -> None:
    _add_slopes(func, flat, spec, k, a, [m], mutates, draw, total, may_read)
    if not mixing or m.numel() <= 1:
        return
    size = int(groups.max()) + 1 if k == 0 and groups is not None and groups.numel() \
        else None
    if size is not None and size <= PROBED_GROUP and groups.shape == m.shape:
        order = 1 << (size - 1).bit_length()
        positions = groups.to(m.device)
        directions = [_hadamard(positions, order, p).to(m.dtype) * m for p in range(order)]
        _add_slopes(func, flat, spec, k, a, directions, mutates, draw, total, may_read)
    else:
        _add_slopes(func, flat, spec, k, a, [_rademacher(m) * m], mutates, draw, total,
                    may_read)


def _add_slopes(func, flat: list, spec, k: int, a: torch.Tensor,
                directions: list[torch.Tensor], mutates: bool, draw: _Draw | None,
                total: list, may_read: bool) -> None:
    """Adds to `total`, output by output, the root mean square over `directions` of
    |J_k direction| (one direction: its absolute value), each by a central difference."""
    if len(directions) == 1:
        for i, slope in _complex_slopes(func, flat, spec, k, a, directions[0], mutates, draw,
                                        may_read):
            if slope.shape == total[i].shape:
                total[i] = total[i] + slope
        return
    squares: dict[int, torch.Tensor] = {}
    for direction in directions:
        for i, slope in _complex_slopes(func, flat, spec, k, a, direction, mutates, draw,
                                        may_read):
            if slope.shape == total[i].shape:
                squares[i] = squares.get(i, 0) + slope * slope
    for i, sq in squares.items():
        total[i] = total[i] + torch.sqrt(sq / len(directions))


def _complex_slopes(func, flat: list, spec, k: int, a: torch.Tensor,
                    direction: torch.Tensor, mutates: bool, draw: _Draw | None,
                    may_read: bool) -> list[tuple[int, torch.Tensor]]:
    """|J_k direction| of a real operand; of a complex one, whose magnitude bounds the modulus
    of its error d = d_r + i d_i, the slopes along the real and the imaginary direction
    combined as sqrt(|J_r M|^2 + |J_i M|^2): the op moves by J_r d_r + J_i d_i, at most
    sqrt(|J_r|^2 + |J_i|^2) |d| (Cauchy-Schwarz), whether it is holomorphic (a product:
    |J_r| = |J_i| = |f'|, sqrt 2 |f'| M) or not (abs, angle, conj: one direction may be flat)."""
    along_real = _slopes_along(func, flat, spec, k, a, direction, mutates, draw, may_read)
    if not a.is_complex():
        return along_real
    along_imaginary = dict(_slopes_along(func, flat, spec, k, a, 1j * direction, mutates, draw,
                                         may_read))
    return [(i, torch.sqrt(s * s + along_imaginary[i] ** 2) if i in along_imaginary else s)
            for i, s in along_real]


def _slopes_along(func, flat: list, spec, k: int, a: torch.Tensor,
                  direction: torch.Tensor, mutates: bool, draw: _Draw | None,
                  may_read: bool = False) -> list[tuple[int, torch.Tensor]]:
    """(output index, |J_k direction|) by a central difference, for each floating output;
    none where the op refuses a shifted operand. `may_read`: as own_scale's."""
    h = _FD_STEP
    evaluations = []
    for sign in (1, -1):
        shifted = [_copy(b) if mutates else b for b in flat]
        shifted[k] = a.detach().clone() + sign * h * direction
        s_args, s_kwargs = spec.unflatten(shifted)
        if draw is not None:
            draw.replay()
        try:
            evaluations.append(flatten(func(*s_args, **s_kwargs))[0])
        except RuntimeError:
            return []
    return [(i, _central_slope(o_hi, o_lo, h, may_read))
            for i, (o_hi, o_lo) in enumerate(zip(*evaluations)) if _is_inexact(o_hi)]


def _central_slope(o_hi: torch.Tensor, o_lo: torch.Tensor, h: float,
                   may_read: bool = False) -> torch.Tensor:
    """|o_hi - o_lo| / 2h. An output both evaluations leave the same (a -inf fill, NaN) has
    slope 0, not the NaN of (-inf) - (-inf); elsewhere a NaN difference is a slope nothing
    bounds. Where every slope is finite (surely_finite, read where `may_read`), so are both
    evaluations, and equal ones already give 0: the selections are skipped."""
    slope = ((o_hi - o_lo) / (2 * h)).abs()
    if may_read and surely_finite(slope):
        return slope
    return torch.where((o_hi == o_lo) | (o_hi.isnan() & o_lo.isnan()), 0.0,
                       torch.nan_to_num(slope, nan=math.inf))


def _abs_scalars(func, m_args: tuple) -> tuple:
    """alpha/beta scalars of addmm-like ops enter the magnitude by their absolute value."""
    args, kwargs = m_args
    kwargs = {k: abs(v) if isinstance(v, (int, float)) and k in ("alpha", "beta") else v
              for k, v in kwargs.items()}
    return args, kwargs


_MOVEMENT_NAMES = {
    "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "squeeze",
    "unsqueeze", "slice", "select", "cat", "stack", "clone", "_to_copy", "copy", "copy_",
    "contiguous", "index", "index_select", "gather", "flip", "roll", "repeat",
    "constant_pad_nd", "alias", "detach", "unfold", "split", "split_with_sizes", "narrow",
    "as_strided", "diagonal", "tril", "triu", "lift_fresh",
    "unbind", "chunk", "masked_select", "take", "_reshape_alias", "pixel_shuffle",
    "im2col", "col2im", "upsample_nearest2d", "max_pool2d_with_indices", "max_pool1d",
    "max_pool3d_with_indices", "amax", "amin", "max", "min", "sort", "topk",
    "view_as_real", "view_as_complex", "_conj", "conj", "conj_physical", "resolve_conj",
    "resolve_neg", "_neg_view",
}


# Ops that read only the shape, dtype and device of their tensor operand, not its values.
_FILL_NAMES = {
    "empty_like", "new_empty", "new_empty_strided", "zeros_like", "ones_like", "full_like",
    "new_zeros", "new_ones", "new_full", "rand_like", "randn_like", "randint_like",
}


# Factories of memory to be written, whose values are whatever the allocator left there.
_EMPTY_NAMES = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided"}


# A tensor literal (`torch.tensor(0.5)`) reaches the trace made already, in the default dtype.
_LITERALS = {torch.ops.aten.lift_fresh.default, torch.ops.aten.lift_fresh_copy.default}


def _is_fill(func) -> bool:
    return func.overloadpacket.__name__ in _FILL_NAMES


# In-place ops whose result does not depend on what `self` held.
_OVERWRITE_NAMES = {
    "copy_", "fill_", "zero_", "bernoulli_", "uniform_", "normal_", "exponential_",
    "geometric_", "log_normal_", "cauchy_", "random_",
}


def _written_unread(func, args: tuple, kwargs: dict) -> set[int]:
    """ids of the operands the op writes without reading them: its out= tensors, and the
    target of an overwriting in-place op."""
    unread = {id(t) for t in flatten(kwargs.get("out", ()))[0]}
    if func.overloadpacket.__name__ in _OVERWRITE_NAMES and args:
        unread.add(id(args[0]))
    return unread


def _view_region(t: torch.Tensor, base: torch.Tensor, view: torch.Tensor) -> torch.Tensor:
    """The elements of `t`, laid out as `base` is, that `view` (a view of `base`) covers."""
    return t.as_strided(view.size(), view.stride(), view.storage_offset() - base.storage_offset())


def _written_into_view(base: torch.Tensor, view: torch.Tensor, whole: torch.Tensor,
                       part: torch.Tensor | float) -> torch.Tensor:
    """`whole` (one value per element of `base`) laid out as `base` is, with `part` where
    `view` lies: what a write into the view makes of a table kept for its base."""
    full = torch.empty_strided(base.size(), base.stride(), dtype=whole.dtype, device=base.device)
    full.copy_(whole.to(base.device))
    _view_region(full, base, view).copy_(
        part.to(base.device) if isinstance(part, torch.Tensor) else part)
    return full


def _writes_first(func) -> bool:
    """An in-place op: one that writes its first operand (copy_, scatter_, add_)."""
    arguments = func._schema.arguments
    alias = arguments[0].alias_info if arguments else None
    return alias is not None and alias.is_write and not arguments[0].kwarg_only


def _taken_again(func, spec, flat: list, in_place: bool) -> Any:
    """`func` on the operands `flat`; an in-place op (`in_place`: flat holds its target as it
    was) writes a copy of its target, which stays as it was for the next taking."""
    if in_place:
        flat = [flat[0].clone(), *flat[1:]]
    s_args, s_kwargs = spec.unflatten(flat)
    return func(*s_args, **s_kwargs)


class _IntegerWrite(NamedTuple):
    """The target of an in-place op on integers as it was before the op (its trace, if any,
    recorded on the copy), and what the trace knew then of the base it views."""

    before: torch.Tensor
    base_before: IntegerTrace | None


def _is_data_movement(func) -> bool:
    """Ops that only move or select values: the magnitude moves with them (no rounding)."""
    return func.overloadpacket.__name__ in _MOVEMENT_NAMES


@dataclass
class OracleResult:
    values: list[torch.Tensor]  # float64
    magnitudes: list[torch.Tensor]
    depths: list[int]
    peaks: list[float]  # per output, Traced.peak: past 1, something behind it overflowed
    # per output, the sum of the unit roundoffs of its coarse storage roundings (Traced)
    quantizations: list[float]
    # per output, other values an honest working-precision run may give it where some
    # element's class differs (MagnitudeTracer.alternatives); empty: only `values` known
    alternatives: list[list[torch.Tensor]] = field(default_factory=list)
    # per output, the other indices a decision's index output may honestly hold at its near
    # ties (integers.admissible_picks), judged as one of them; empty: none
    picks: list[list[torch.Tensor]] = field(default_factory=list)
    # per output, whether `alternatives` hold every value an open element (an infinite
    # magnitude: a read at an open pick) may honestly take, so that EXC-01 judges its class
    classes_known: list[bool] = field(default_factory=list)


class TrustedStaleEntry(Exception):
    """A trusting trace (MagnitudeTracer.trusting) used an entry that something unseen had
    written over: its result is not the checking trace's, so run it again checking."""


def to_double(x: Any) -> Any:
    return x.detach().to(_double(x.dtype)) if _is_inexact(x) else x


def run_oracle(model: torch.nn.Module, inputs: list[Any],
               cotangents: list[torch.Tensor] | None = None, magnitudes: bool = True,
               arithmetic: torch.dtype = torch.float32,
               stored: dict[str, torch.dtype] | None = None,
               differentiated: Sequence[int] | None = None, trusting: bool = False
               ) -> OracleResult:
    """`model` must already be in float64 (parameters and buffers upcast); `stored` names the
    working format of each of its parameters and buffers, `inputs` are in theirs, and
    `arithmetic` is the precision the working run computes in. With `cotangents`, the
    gradients of the outputs against the inputs at `differentiated` (None: every floating
    input, kdiff.data.differentiated.floating_positions) follow the outputs, traced through the backward pass like any other operation. `trusting` traces without a
    synchronisation per operand and raises TrustedStaleEntry where that made a difference
    (the caller runs it again without)."""
    args = [to_double(x) for x in inputs]
    if cotangents is not None:
        if differentiated is None:
            differentiated = floating_positions(args)
        args = differentiable(args, differentiated)
    tracer = MagnitudeTracer(magnitudes, arithmetic, trusting)
    for x, a in zip(inputs, args):
        if _is_inexact(a):
            tracer.declare(a, x.dtype)
    for name, t in [*model.named_parameters(), *model.named_buffers()]:
        if stored and name in stored and _is_inexact(t):
            tracer.declare(t, stored[name])
    # torch's fused attention kernels (the CPU's flash kernel takes float64) are one op to the
    # trace; its math backend writes the same attention out as matmuls and a softmax
    with torch.set_grad_enabled(cotangents is not None), sdpa_kernel(SDPBackend.MATH), tracer, \
            WorkingFormats(tracer.working_format):
        out = model(*args)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if cotangents is not None:
            wrt = [args[i] for i in differentiated]
            tracer.differentiating = True
            outs = [o.detach() for o in outs] + input_gradients_interruptibly(
                outs, wrt, cotangents, tracer)
    values, mags, depths, peaks, quantizations = [], [], [], [], []
    alternatives, picks, classes_known = [], [], []
    float_numel = sum(a.numel() for a in args if _is_inexact(a))
    outs = [o.detach() if isinstance(o, torch.Tensor) else torch.tensor(o, dtype=torch.float64)
            for o in outs]
    found = [tracer.lookup(o) if _is_inexact(o) else None for o in outs]
    if tracer.trusted_a_stale_entry():
        raise TrustedStaleEntry("an operand was written outside the traced operations")
    for o, traced in zip(outs, found):
        if traced is None:  # indices, masks: exact, judged as such, but for near ties and steps
            values.append(o)
            integer = tracer.integer(o)
            magnitude = torch.zeros(o.shape, dtype=torch.float64, device=o.device) \
                if integer is None else integer.magnitude.to(o.device)
            others = admissible_picks(integer)
            if others is not None:  # judged as one of its admissible picks, not left open
                magnitude = torch.where(torch.isinf(magnitude), 0.0, magnitude)
            mags.append(magnitude)
            picks.append(others or [])
            classes_known.append(False)
            depths.append(1)
            peaks.append(0.0)
            quantizations.append(0.0)
            alternatives.append([])
            continue
        m, d, peak, stored_as, q = traced
        if not tracer.produced(o) and not _is_input(o, args):
            traced_m = m
            m, d = opaque_scale(o, float_numel)
            m = torch.where(torch.isinf(traced_m), traced_m, m)  # open picks stay open
            peak = torch.maximum(peak, tracer.share_of_range(m, stored_as))
        values.append(o)
        mags.append(m.detach())
        depths.append(max(1, d))
        peaks.append(float(peak))
        quantizations.append(q)
        alternative = tracer.alternatives(o)
        alternatives.append([a.detach() for a in alternative.values])
        classes_known.append(alternative.picks_complete)
        picks.append([])
    return OracleResult(values, mags, depths, peaks, quantizations, alternatives, picks,
                        classes_known)


def _is_input(o: torch.Tensor, args: list[Any]) -> bool:
    ptr = o.untyped_storage().data_ptr()
    return any(_is_inexact(a) and a.untyped_storage().data_ptr() == ptr for a in args)


def opaque_scale(o: torch.Tensor, float_input_numel: int) -> tuple[torch.Tensor, int]:
    """An output no traced operation produced (the reference launched its own kernel, a
    TritonBench gold Triton kernel say): nothing is known of its operands, so each element is
    judged against the output's typical magnitude (its mean |value|) as well as its own, and
    every output is taken to read every input element (the longest reduction possible)."""
    own = own_scale(o)
    typical = own.mean() if o.numel() else o.new_zeros(())
    depth = max(1, float_input_numel // max(1, o.numel()) + 1)
    return own + typical, depth
