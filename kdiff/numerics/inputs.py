"""Input generators, built the way hypothesis builds strategies: small pieces that compose.

A `Strategy` draws the *free* floating values of one input tensor. `realize()` applies it to
every input of a problem while keeping the problem's preconditions, learned from its own
`get_inputs()` over several seeds (`learn_templates()`):
- positions whose value never changes across seeds are structural (a mask, the zero half of a
  triangular matrix, a constant) and keep their value;
- integer and boolean inputs (indices, targets, lengths) are never perturbed, except 8-bit
  integer data (quantized values, packed int4): drawn uniformly over the narrowest integer
  format that holds every value the problem made (BYTE_DATA, `code_range`);
- an input that was never negative stays non-negative; one whose slices along a dimension
  always summed to one (a probability distribution) is renormalised the same way; one whose
  slices along a dimension were always in ascending order (bucket boundaries, sorted keys:
  what `searchsorted` and `bucketize` require) is sorted the same way;
- a square matrix (over the last two dimensions) that was always symmetric stays symmetric,
  and one always symmetric positive definite (what a cholesky or a solve needs) stays so.
A complex input is drawn as its real and imaginary components (torch.view_as_real), each a
free value like any floating one; the relations above are of real values and not looked for.
"""
from __future__ import annotations

import contextlib
import enum
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from kdiff.data.problem import ProblemModule
from kdiff.data.recast import recast
from kdiff.data.seeding import generator, set_seed
from kdiff.numerics.tolerance import (
    components,
    gamma,
    inexact,
    unit_roundoff,
)

TEMPLATE_SEEDS = (0, 1, 2, 3)

Draw = Callable[[tuple[int, ...], torch.Generator], torch.Tensor]  # float64 values


@dataclass(frozen=True)
class Strategy:
    """A named recipe for values; compose with the helpers below."""

    name: str
    draw: Draw

    def __call__(self, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
        return self.draw(shape, gen)


def normal() -> Strategy:
    return Strategy("normal", lambda s, g: torch.randn(s, generator=g, dtype=torch.float64))


def uniform(lo: float = -1.0, hi: float = 1.0) -> Strategy:
    return Strategy(f"uniform({lo:g},{hi:g})",
                    lambda s, g: lo + (hi - lo) * torch.rand(s, generator=g, dtype=torch.float64))


def scaled(inner: Strategy, factor: float) -> Strategy:
    return Strategy(f"{inner.name}x{factor:g}", lambda s, g: inner(s, g) * factor)


def heavy_tailed(df: float = 1.5) -> Strategy:
    """Student-t draws: a few values orders of magnitude beyond the bulk."""
    def draw(s: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
        z = torch.randn(s, generator=g, dtype=torch.float64)
        chi = torch.randn((*s, 4), generator=g, dtype=torch.float64).pow(2).mean(-1)
        return (z / chi.clamp_min(1e-6).sqrt() ** (2 / df)).clamp(-1e4, 1e4)
    return Strategy(f"student_t(df={df:g})", draw)


def with_outliers(inner: Strategy, fraction: float = 0.01, factor: float = 1e3) -> Strategy:
    def draw(s: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
        x = inner(s, g)
        hit = torch.rand(s, generator=g, dtype=torch.float64) < fraction
        return torch.where(hit, x * factor, x)
    return Strategy(f"{inner.name}+outliers", draw)


def mostly_zero(inner: Strategy, density: float = 0.05) -> Strategy:
    def draw(s: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
        keep = torch.rand(s, generator=g, dtype=torch.float64) < density
        return torch.where(keep, inner(s, g), torch.zeros(s, dtype=torch.float64))
    return Strategy(f"mostly_zero({inner.name})", draw)


def log_uniform_magnitude(decades: float) -> Strategy:
    """Mixed signs over a wide dynamic range: |x| = 10^U(-d, d)."""
    def draw(s: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
        mag = 10.0 ** ((torch.rand(s, generator=g, dtype=torch.float64) * 2 - 1) * decades)
        sign = torch.where(torch.rand(s, generator=g, dtype=torch.float64) < 0.5, -1.0, 1.0)
        return sign * mag
    return Strategy(f"log_uniform(1e±{decades:g})", draw)


def offset(inner: Strategy, shift: float) -> Strategy:
    """A large common offset: cancellation for anything that subtracts a mean."""
    return Strategy(f"{inner.name}+{shift:g}", lambda s, g: inner(s, g) + shift)


def one_large_many_small(small: float = 1e-4) -> Strategy:
    """Per row one term of 1, the rest tiny and positive: a low-precision running sum stops
    growing once the small terms fall below half an ulp of it."""
    def draw(s: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
        x = small * (0.5 + torch.rand(s, generator=g, dtype=torch.float64))
        if len(s) and s[-1]:  # a zero-size last dim has no rows to lead
            flat = x.reshape(-1, s[-1])
            flat[:, 0] = 1.0
        return x
    return Strategy(f"one_large_many_small({small:g})", draw)


def constant(value: float) -> Strategy:
    return Strategy(f"const({value:g})", lambda s, g: torch.full(s, value, dtype=torch.float64))


def with_specials(inner: Strategy, value: float, fraction: float = 0.02) -> Strategy:
    """Scatter `value` (NaN, +Inf, -Inf, a subnormal) into a small fraction of positions;
    at least one position always gets it."""
    def draw(s: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
        x = inner(s, g)
        if x.numel() == 0:
            return x
        hit = torch.rand(s, generator=g, dtype=torch.float64) < fraction
        flat = hit.reshape(-1)
        flat[int(torch.randint(0, flat.numel(), (1,), generator=g))] = True
        return torch.where(hit, torch.full_like(x, value), x)
    return Strategy(f"{inner.name}+{value:g}@{fraction:g}", draw)


# -- templates learned from the problem ------------------------------------------------------

# 8-bit integer inputs whose values vary across seeds and take more than two values (not a
# 0/1 mask) are data: quantized values, or sub-byte integers packed two or more to a byte.
# Every bit pattern of a byte is a valid int8/uint8 value and a valid pair of signed or
# unsigned nibbles, so a uniform draw over all 256 keeps any packing valid and reaches the
# format's edges (int8 -128, nibble -8) that a symmetric quantizer never makes (amax maps to
# 127 or 7). With its scales drawn positive apart (InputTemplate.nonnegative), each pair
# (q, s) is what a full-range quantizer makes of q * s, so the two stay consistent.
# Sub-byte codes held one to a byte (HQQ's and gemlite's unpacked 4-bit weights, uint8 in
# 0..15) are another format: a byte above 15 is no 4-bit code, and a kernel that packs the
# codes into nibbles keeps 4 bits of it where the reference reads the whole byte. So the
# width drawn is the narrowest that holds every value the problem made (`code_range`): a
# whole byte wherever the problem used its top bit (the cases above), the codes' own width
# otherwise, over which a uniform draw still reaches the format's edges (the 0 or -8 a
# symmetric quantizer never makes).
# Wider integers (indices, lengths, targets) are never drawn.
BYTE_DATA = frozenset({torch.int8, torch.uint8})


class MatrixStructure(enum.Enum):
    """A relation between positions that a drawn square matrix keeps (last two dims)."""

    SYMMETRIC = "symmetric"
    POSITIVE_DEFINITE = "symmetric positive definite"


def symmetric_up_to_rounding(x: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether `x` (made in `dtype`) equals its transpose but for the rounding of the products
    that made it. A Gram matrix G G^T computed in floating point is not bitwise symmetric where
    the product's kernel sums entry (i, j) in another order than (j, i) (AVX-512 CPU kernels,
    GPU ones). Its entries' rounding is at most gamma_m sum_k |g_ik g_jk| <= gamma_m max|x|
    (Cauchy-Schwarz: sum_k |g_ik g_jk| <= sqrt(x_ii x_jj)), under sqrt(eps) max|x| for up to
    1 / sqrt(eps) terms (2896 in fp32; eps = 2u); entries of a matrix drawn without the
    relation differ by about max|x|."""
    if not dtype.is_floating_point:
        return torch.equal(x, x.transpose(-1, -2))
    scale = x.abs().amax()
    tolerance = torch.finfo(dtype).eps ** 0.5 * scale
    return bool(torch.isfinite(scale)) and bool(
        ((x - x.transpose(-1, -2)).abs() <= tolerance).all())


def matrix_structure(values: list[torch.Tensor], dtype: torch.dtype) -> MatrixStructure | None:
    """The structure every one of `values` (same-shaped draws, made in `dtype`) has, if any."""
    v = values[0]
    if (v.dim() < 2 or v.shape[-1] != v.shape[-2] or v.shape[-1] < 2 or v.is_complex()
            or any(x.shape != v.shape or not symmetric_up_to_rounding(x, dtype)
                   for x in values)):
        return None
    if all(int(torch.linalg.cholesky_ex(x.to(torch.float64)).info.max()) == 0 for x in values):
        return MatrixStructure.POSITIVE_DEFINITE
    return MatrixStructure.SYMMETRIC


# A drawn positive definite matrix is G G^T / n for a drawn G, plus this share of its mean
# diagonal on the diagonal: its eigenvalues are at least that shift, so its condition number
# stays below about n / share, and a cholesky in the working precision succeeds.
DIAGONAL_SHARE = 0.1


def with_structure(x: torch.Tensor, structure: MatrixStructure | None) -> torch.Tensor:
    """`x` (float64 draws) made symmetric, or symmetric positive definite."""
    if structure is None:
        return x
    if structure is MatrixStructure.SYMMETRIC:
        return (x + x.transpose(-1, -2)) / 2
    n = x.shape[-1]
    gram = x @ x.transpose(-1, -2) / n
    gram = (gram + gram.transpose(-1, -2)) / 2  # bitwise symmetric, whatever the product's order
    mean_diagonal = gram.diagonal(dim1=-2, dim2=-1).mean(-1)[..., None, None]
    shift = (DIAGONAL_SHARE * mean_diagonal).clamp_min(torch.finfo(torch.float32).tiny)
    return gram + shift * torch.eye(n, dtype=x.dtype)


@dataclass
class InputTemplate:
    example: Any  # the value at the first template seed
    floating: bool
    structural: torch.Tensor | None = None  # True where the value never changed across seeds
    nonnegative: bool = False
    normalized_dim: int | None = None  # slices along this dim always summed to 1
    sorted_dim: int | None = None  # slices along this dim always ascending
    byte_data: bool = False  # 8-bit integer data drawn as random bytes (BYTE_DATA)
    byte_range: tuple[int, int] = (0, 0)  # what byte data is drawn in, both ends included
    matrix: MatrixStructure | None = None  # kept by every draw (last two dims)

    @property
    def complex(self) -> bool:
        """Drawn as its components (`components`): `structural` is theirs, shape (..., 2)."""
        return isinstance(self.example, torch.Tensor) and self.example.is_complex()

    @property
    def free_count(self) -> int:
        if not self.floating:
            return 0
        return int((~self.structural).sum()) if self.structural is not None \
            else components(self.example).numel()


def draw_benchmark_inputs(problem: ProblemModule, seed: int) -> list[Any]:
    set_seed(seed)
    return problem.get_inputs()


@contextlib.contextmanager
def seeds_offset(offset: int) -> Iterator[None]:
    """torch.manual_seed(s) seeds with s + offset meanwhile: a get_inputs() that seeds itself
    (`torch.manual_seed(0)` in its body) draws other values for each template seed, so that
    its structural positions are told from its random ones as for any other problem."""
    original = torch.random.manual_seed

    def offset_seed(seed: int) -> torch.Generator:
        return original(int(seed) + offset)
    torch.manual_seed = torch.random.manual_seed = offset_seed
    try:
        yield
    finally:
        torch.manual_seed = torch.random.manual_seed = original


def learn_templates(problem: ProblemModule, seeds: tuple[int, ...] = TEMPLATE_SEEDS
                    ) -> list[InputTemplate]:
    draws = []
    for s in seeds:
        with seeds_offset(s):
            draws.append(draw_benchmark_inputs(problem, s))
    templates = []
    for i, example in enumerate(draws[0]):
        if not isinstance(example, torch.Tensor) or not (
                inexact(example) or example.dtype in BYTE_DATA):
            templates.append(InputTemplate(example, floating=False))
            continue
        values = [components(d[i].detach()).to(torch.float64).cpu() for d in draws]
        if example.is_complex():
            templates.append(InputTemplate(example, True, _structural(values)))
            continue
        structural = _structural(values)
        flat = torch.cat([v.reshape(-1) for v in values])
        if not example.is_floating_point():
            data = (structural is None or not bool(structural.all())) \
                and flat.unique().numel() > 2
            templates.append(InputTemplate(example, False, structural if data else None,
                                           byte_data=data,
                                           byte_range=code_range(flat, example.dtype)))
            continue
        nonneg = bool(flat.numel()) and bool((flat >= 0).all())
        norm_dim = _normalized_dim(values, example.dtype) if nonneg else None
        fixed = structural is not None and bool(structural.all())  # nothing drawn
        templates.append(InputTemplate(example, True, structural, nonneg, norm_dim,
                                       _sorted_dim(values) if structural is None else None,
                                       matrix=None if fixed
                                       else matrix_structure(values, example.dtype)))
    return templates


def code_range(values: torch.Tensor, dtype: torch.dtype) -> tuple[int, int]:
    """The range of the narrowest integer format of at most 8 bits that holds every value
    in `values` (BYTE_DATA's comment): unsigned where none is negative, two's complement
    otherwise, within `dtype`."""
    info = torch.iinfo(dtype)
    if not values.numel():
        return info.min, info.max
    low, high = int(values.min()), int(values.max())
    for bits in range(1, 9):
        lo, hi = (0, 2**bits - 1) if low >= 0 else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        if lo <= low and high <= hi:
            return max(lo, info.min), min(hi, info.max)
    return info.min, info.max


def _structural(values: list[torch.Tensor]) -> torch.Tensor | None:
    """True where every seed drew the same value (None: nowhere, or shapes differ)."""
    if len(values) < 2 or any(v.shape != values[0].shape for v in values):
        return None
    stacked = torch.stack(values)
    structural = (stacked == stacked[0]).all(0)
    return structural if bool(structural.any()) else None


def normalization_tolerance(n: int, dtype: torch.dtype) -> float:
    """How far from one a slice of n probabilities stored in `dtype` may sum: a normaliser
    summed in fp32 or wider is off by at most gamma_n relative, which scales every value
    alike, and each value's rounding to `dtype` by u_dtype relative, at most u_dtype over the
    slice (the values are non-negative and sum to about one)."""
    return gamma(n, unit_roundoff(torch.float32)) + unit_roundoff(dtype)


def _normalized_dim(values: list[torch.Tensor], dtype: torch.dtype) -> int | None:
    v = values[0]
    for d in range(v.dim() - 1, -1, -1):
        tolerance = normalization_tolerance(v.shape[d], dtype)
        if v.shape[d] > 1 and all(bool(((x.sum(d) - 1).abs() <= tolerance).all())
                                  for x in values if x.shape == v.shape):
            return d
    return None


# Slices of at least this many values: random draws are all in order by chance with
# probability (1/n!)^(slices x seeds), under 1e-3 for one slice of 3 over the four seeds.
SORTED_MIN_LENGTH = 3


def _sorted_dim(values: list[torch.Tensor]) -> int | None:
    v = values[0]
    for d in range(v.dim() - 1, -1, -1):
        if v.shape[d] >= SORTED_MIN_LENGTH and all(
                x.shape == v.shape and bool((x.diff(dim=d) >= 0).all()) for x in values):
            return d
    return None


def realize(templates: list[InputTemplate], strategy: Strategy, seed: int,
            only: set[int] | None = None) -> list[Any]:
    """Inputs for one trial: free floating positions drawn from `strategy`, everything else
    as the problem made it. `only` restricts drawing to some input indices."""
    gen = generator(seed)
    out = []
    for i, t in enumerate(templates):
        if t.byte_data and (only is None or i in only):
            out.append(random_bytes(t, gen))
            continue
        if not t.floating or (only is not None and i not in only):
            out.append(t.example.clone() if isinstance(t.example, torch.Tensor) else t.example)
            continue
        ex: torch.Tensor = t.example
        if t.complex:
            x = strategy(tuple(components(ex).shape), gen)
            if t.structural is not None:
                x = torch.where(t.structural, components(ex.detach()).to(torch.float64).cpu(), x)
            x = representable(x, ex.dtype.to_real())
            out.append(torch.view_as_complex(x.contiguous()).to(dtype=ex.dtype, device=ex.device))
            continue
        x = strategy(tuple(ex.shape), gen)
        if t.nonnegative:
            x = x.abs()
        x = with_structure(x, t.matrix)
        if t.sorted_dim is not None:
            x = x.sort(t.sorted_dim).values
        if t.normalized_dim is not None:
            x = x / x.sum(t.normalized_dim, keepdim=True).clamp_min(torch.finfo(torch.float64).tiny)
        if t.structural is not None:
            x = torch.where(t.structural, ex.detach().to(torch.float64).cpu(), x)
        out.append(representable(x, ex.dtype).to(dtype=ex.dtype, device=ex.device))
    return out


def random_bytes(t: InputTemplate, gen: torch.Generator) -> torch.Tensor:
    """Byte data (BYTE_DATA) drawn uniformly over its format's range (`code_range`),
    structural positions kept."""
    ex: torch.Tensor = t.example
    low, high = t.byte_range
    x = torch.randint(low, high + 1, tuple(ex.shape), generator=gen, dtype=ex.dtype)
    if t.structural is not None:
        x = torch.where(t.structural, ex.cpu(), x)
    return x.to(ex.device)


# Floating formats without infinities (OCP OFP8 E4M3: the top exponent holds finite values
# and NaN only): a cast of +-Inf to them is NaN on CUDA and saturates on the CPU.
NO_INFINITY = frozenset({torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz})


def holds_infinity(dtype: torch.dtype) -> bool:
    """Whether the format holds +-Inf (a complex one: in its components)."""
    return dtype.is_complex or (dtype.is_floating_point and dtype not in NO_INFINITY)


def representable(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Finite float64 draws saturated to the format's largest finite value, so that a large
    draw stays the largest number the format holds (a cast past it gives Inf in IEEE formats,
    NaN or a saturated value in fp8, by device), and the draw means the same thing on every
    device. Non-finite draws (EXC-01's injections) stay as drawn: a gate injects only what
    the format holds (`holds_infinity`)."""
    if not dtype.is_floating_point:
        return x
    top = torch.finfo(dtype).max
    if x.numel() == 0 or bool(x.abs().max() <= top):  # every draw finite and in range
        return x
    if torch.isinf(x).any() and not holds_infinity(dtype):
        raise ValueError(f"{dtype} has no infinity: an Inf drawn for it is unrepresentable")
    return torch.where(torch.isfinite(x), x.clamp(-top, top), x)


def cast_inputs(inputs: list[Any], dtype: torch.dtype | None) -> list[Any]:
    """Floating inputs recast to `dtype`; None: as they are (the problem's own precision)."""
    if dtype is None:
        return list(inputs)
    return [recast(x, dtype) if isinstance(x, torch.Tensor) else x for x in inputs]


def noncontiguous(x: Any) -> Any:
    """The same values in a transposed (column-major) layout."""
    if not isinstance(x, torch.Tensor) or x.dim() < 2:
        return x
    buf = torch.empty(tuple(reversed(x.shape)), dtype=x.dtype, device=x.device)
    view = buf.permute(*reversed(range(x.dim())))
    view.copy_(x)
    return view


# Elements before an input laid out at an offset: 16 is 16 bytes or more for every dtype, so
# the view stays as aligned as a fresh allocation (what an aligned vector load needs), and a
# kernel that reads from its storage's start instead of the tensor's reads the wrong values.
OFFSET_ELEMENTS = 16


def at_offset(x: Any) -> Any:
    """The same values, contiguous, starting OFFSET_ELEMENTS into a larger storage (a slice
    `buffer[16:]`, as a caller's view hands them over); the elements before it are zeros."""
    if not isinstance(x, torch.Tensor) or x.layout != torch.strided:
        return x
    buffer = torch.zeros(OFFSET_ELEMENTS + x.numel(), dtype=x.dtype, device=x.device)
    view = buffer[OFFSET_ELEMENTS:].view(x.shape)
    view.copy_(x)
    return view


COVERAGE = (
    normal(),
    uniform(-1.0, 1.0),
    uniform(0.0, 1.0),
    scaled(normal(), 1e3),
    scaled(normal(), 1e-3),
    heavy_tailed(),
    with_outliers(normal()),
    mostly_zero(normal()),
)
