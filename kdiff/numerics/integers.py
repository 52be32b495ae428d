"""What an integer result of the reference may honestly be, beside the value the float64
oracle computes: an index picked by comparing values (a decision) is open where another value
lies within rounding of the one picked (a near tie), and a rounding to integers (a step
function, a cast, a comparison) may land a step away where its operand lies within its
rounding error of a step. The tracer (`oracle.py`) records both per integer tensor
(IntegerTrace) and carries them into what is computed from those integers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import torch

aten = torch.ops.aten


@dataclass(frozen=True)
class Decision:
    """An op whose integer output is an index picked by comparing the values of its first
    operand along one dim (all elements where it has none)."""

    index: int  # the index output's position among the op's outputs
    # Whether an exact tie of the values has a documented pick (the first occurrence, a
    # stable sort's order): then a tie among values read as they are stored is judged.
    documented: Callable[[dict], bool] = lambda arguments: False


def _first_occurrence(arguments: dict) -> bool:
    return True


DECISIONS = {
    aten.argmax.default: Decision(0, _first_occurrence),
    aten.argmin.default: Decision(0, _first_occurrence),
    aten.max.dim: Decision(1, _first_occurrence), aten.min.dim: Decision(1, _first_occurrence),
    aten.sort.default: Decision(1),
    aten.sort.stable: Decision(1, lambda arguments: bool(arguments.get("stable"))),
    aten.topk.default: Decision(1), aten.kthvalue.default: Decision(1),
    aten.median.dim: Decision(1), aten.nanmedian.dim: Decision(1),
}


def bound_arguments(func, args: tuple, kwargs: dict) -> dict:
    """An op's arguments by their schema's names, defaults filled in."""
    bound = {}
    for i, argument in enumerate(func._schema.arguments):
        if i < len(args) and not argument.kwarg_only:
            bound[argument.name] = args[i]
        elif argument.name in kwargs:
            bound[argument.name] = kwargs[argument.name]
        elif argument.has_default_value():
            bound[argument.name] = argument.default_value
    return bound


class TieSets:
    """Along the last dim of `values`, with each element's worst-case error: which elements
    a pick may honestly take in place of the one it took. The error intervals [v - e, v + e]
    that chain together in sorted order (each meeting the reach of those before it) form a
    cluster; clusters keep their order whatever the roundings, so a rank is only ever held
    by an element of the cluster that holds it exactly (found in one pass: running extremes,
    not all pairs). Within the cluster an element may hold rank r where r lies between the
    number of elements certainly below it and n - 1 less the number certainly above it:
    that is every rank some rounding of the values gives it. NaN ranks above every number,
    as torch's max, sort and pools order it, and NaNs tie among themselves."""

    def __init__(self, values: torch.Tensor, error: torch.Tensor) -> None:
        values, error = values.detach(), error.detach().to(values.device)
        ordered, self.order = values.sort(-1)  # NaN last
        e = error.gather(-1, self.order)
        nan = ordered.isnan()
        # an unknown value (an infinite error) reaches everywhere; NaN sits above all numbers
        low = torch.where(nan, math.inf, torch.where(torch.isinf(e), -math.inf, ordered - e))
        high = torch.where(nan, math.inf, torch.where(torch.isinf(e), math.inf, ordered + e))
        n = ordered.shape[-1]
        at = torch.arange(n, device=values.device).expand(ordered.shape)
        starts = torch.ones_like(nan)
        if n > 1:
            reach = high.narrow(-1, 0, n - 1).cummax(-1).values
            starts.narrow(-1, 1, n - 1).copy_((low.narrow(-1, 1, n - 1) > reach)
                                              | (nan.narrow(-1, 1, n - 1)
                                                 & ~nan.narrow(-1, 0, n - 1)))
        ends = torch.ones_like(nan)
        ends.narrow(-1, 0, n - 1).copy_(starts.narrow(-1, 1, n - 1))
        self.first = torch.where(starts, at, 0).cummax(-1).values
        last = torch.where(ends, at, n).flip(-1).cummin(-1).values.flip(-1)
        self.size = last - self.first + 1
        # each element's ranks, by the numbers certainly below and above it (NaNs apart)
        nans = nan.sum(-1, keepdim=True)
        below = torch.searchsorted(high.sort(-1).values, low.contiguous())
        above_numbers = n - torch.searchsorted(torch.where(nan, -math.inf, low).sort(-1).values,
                                               high.contiguous(), right=True)
        self.lowest = torch.where(nan, n - nans, below)
        self.highest = torch.where(nan, n - 1, n - 1 - above_numbers - nans)
        self.rank = torch.empty_like(self.order).scatter_(-1, self.order, at.contiguous())

    def picks(self, index: torch.Tensor) -> "tuple[torch.Tensor, int, Callable[[int], torch.Tensor]]":
        """For picks `index` along the last dim (any number of them per row): where another
        element may hold a pick's rank (it lies in a cluster of several), the largest such
        cluster less one, and the m-th other pick: each open pick moved to the m-th next
        element of its cluster, cyclically, where that element may hold its rank (else kept)."""
        p = self.rank.gather(-1, index)
        first, size = self.first.gather(-1, p), self.size.gather(-1, p)
        open_ = size > 1
        count = int(size[open_].max()) - 1 if bool(open_.any()) else 0

        def nth(m: int) -> torch.Tensor:
            q = first + (p - first + m) % size
            fits = (self.lowest.gather(-1, q) <= p) & (p <= self.highest.gather(-1, q))
            return torch.where(open_ & fits, self.order.gather(-1, q), index)

        return open_, count, nth


@dataclass(frozen=True)
class OpenPicks:
    """The other values an integer tensor may honestly hold where open picks decided it: the
    m-th (m = 1..count) holds each open pick moved to the m-th next element of its tie set
    (TieSets), the rest as it is; a tensor computed from picks, the op taken again on them."""

    count: int
    nth: Callable[[int], torch.Tensor]

    def others(self) -> list[torch.Tensor]:
        return [self.nth(m) for m in range(1, self.count + 1)]


def open_picks(values: torch.Tensor, error: torch.Tensor, index: torch.Tensor,
               dim: int | None) -> tuple[torch.Tensor, OpenPicks]:
    """Where an index output `index` (shaped as its op returns it) picked, along `dim` of
    `values` (None: over all elements), an element whose rank rests on roundings (TieSets),
    and the other picks the error model admits there."""
    shape = index.shape
    if dim is None:
        values, error, dim = values.reshape(-1), error.reshape(-1), 0
    if values.dim() == 0 or not index.numel():  # no picks (a sort of an empty axis)
        return torch.zeros(shape, dtype=torch.bool, device=index.device), OpenPicks(
            0, lambda m: index)
    dim %= values.dim()
    picked = index.reshape(1) if index.dim() == 0 else index
    if picked.dim() < values.dim():  # keepdim=False
        picked = picked.unsqueeze(dim)
    ties = TieSets(values.movedim(dim, -1), error.movedim(dim, -1))
    open_, count, nth = ties.picks(picked.movedim(dim, -1).to(values.device))
    return (open_.movedim(-1, dim).reshape(shape).to(index.device),
            OpenPicks(count, lambda m: nth(m).movedim(-1, dim).reshape(shape).to(index.device)))


# The most other picks taken one by one: an op after an open pick is taken again for each,
# and a tie set as large as a row (a mostly-zero draw's, an argmax over equal values) would
# cost one run of every later op per element of it, n^2 for a scatter. Past this many the
# op's result is not followed pick by pick: moves gives None, and what the op computes from
# the picks is taken as unknown wherever they are open (sound; looser on such draws alone).
MAX_OTHER_PICKS = 64


def admissible_picks(trace: IntegerTrace | None) -> list[torch.Tensor] | None:
    """The other values a decision's index output (or a view, a cast of it) may honestly
    hold, element by element (its magnitude infinite there: a near tie), where they are known
    in full; None where not (an integer computed from picks, or more than MAX_OTHER_PICKS)."""
    if trace is None or not trace.picks_complete or trace.picks is None \
            or trace.picks.count > MAX_OTHER_PICKS:
        return None
    return trace.picks.others()


def moves(a: torch.Tensor, where: torch.Tensor, steps: torch.Tensor, open_: bool,
          picks: OpenPicks | None) -> list[torch.Tensor | None]:
    """`a` moved where `where` holds, every way the trace admits: a mask flipped; open picks
    to each other element of their tie sets (`picks`), or, where nothing is known of what
    else they may hold (an integer computed through a float from an open pick), to a
    neighbour either way inside the picks' own range; a stepped integer by its number of
    steps, both ways, inside its format. None: too many other picks to follow
    (MAX_OTHER_PICKS), or no neighbour inside the range."""
    if a.dtype == torch.bool:
        return [torch.where(where, ~a, a)]
    wide = a.long()
    if open_ and picks is not None:
        if picks.count > MAX_OTHER_PICKS:
            return [None]
        return [torch.where(where, other.to(a.device), a) for other in picks.others()]
    if open_:
        top, low = int(a.max()), min(int(a.min()), 0)
        if top == low:
            # one value throughout, at or below 0 (a cast of NaN everywhere: INT_MIN): no
            # neighbour inside the range, so what the op gives elsewhere is unknown
            return [None]
        return [torch.where(where, (wide + d).clamp(low, top), wide).to(a.dtype) for d in (1, -1)]
    info = torch.iinfo(a.dtype)
    n = torch.where(where, steps.ceil(), 0.0).long()
    return [(wide + d * n).clamp(info.min, info.max).to(a.dtype) for d in (1, -1)]


def how_far(o: torch.Tensor, again: torch.Tensor | None) -> torch.Tensor:
    """|again - o| elementwise in float64 (infinite where one is NaN and the other not, or
    where the op could not be taken again)."""
    if again is None or again.shape != o.shape:
        return torch.full(o.shape, math.inf, dtype=torch.float64, device=o.device)
    x, y = o.detach().to(torch.float64), again.detach().to(torch.float64)
    both_nan = torch.isnan(x) & torch.isnan(y)
    return torch.where(both_nan, 0.0, torch.nan_to_num((y - x).abs(), nan=math.inf))


class IntegerTrace(NamedTuple):
    """What the trace knows of an integer tensor: its magnitude (0 where it is exact, an
    infinite one where a decision's pick is a near tie, step_magnitude where a rounding
    to an integer may land a step away) and the depth behind it."""

    magnitude: torch.Tensor  # float64
    depth: int
    # the other values its open picks may honestly take (None: none known)
    picks: OpenPicks | None = None
    # whether `picks` are each element's admissible values, every one: a decision's own index
    # output (every element of a tie set that may hold the pick's rank) or data movement of
    # it alone (a view, a cast), not an integer computed from picks, whose m-th other value
    # moves every pick at once
    picks_complete: bool = False


# Step functions of a floating operand: where the operand lies within its rounding error of
# a step, an honest implementation may land on the other side of it. Besides these, any
# cast of a floating tensor to an integer format (truncation). bucketize is a step at each
# of its boundaries (a codebook quantizer's nearest code, by the midpoints between codes).
INTEGRAL_STEPS = {aten.round.default, aten.floor.default, aten.ceil.default,
                  aten.trunc.default, aten.sign.default, aten.floor_divide.default,
                  aten.div.Tensor_mode, aten.div.Scalar_mode, aten.bucketize.Tensor}
# Steps of two operands (the dividend's and the divisor's errors both move the step; a
# sorted sequence's and the values' searchsorted places in it). Not remainder and fmod: where
# they wrap by the divisor, the output is periodic, and a problem declares it so
# (KDIFF_PERIODIC_OUTPUTS) to have it judged around the circle.
BINARY_STEPS = {aten.floor_divide.default, aten.div.Tensor_mode, aten.div.Scalar_mode,
                aten.searchsorted.Tensor}
STEPS = INTEGRAL_STEPS | BINARY_STEPS | {aten.round.decimals, aten.frac.default}
# Ops that give integers exactly from integers and integer constants (moving none by more
# than the largest step an operand carries).
KEEPS_INTEGERS = {aten.clamp.default, aten.clamp.Tensor, aten.clamp_min.default,
                  aten.clamp_max.default, aten.neg.default, aten.abs.default,
                  aten.maximum.default, aten.minimum.default, aten.where.self}
# Ops whose result moves by the sum of what its operands move.
ADDS_STEPS = {aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar}


def carried(func, args: tuple, kwargs: dict, flat: list, out: Any, movement: bool,
            steps_of: Callable[[torch.Tensor], torch.Tensor | None],
            unknown_exact: bool = False) -> torch.Tensor | None:
    """The steps the result of an op on tensors of integers carries (step_magnitude,
    float64, shaped as `out`), from its operands' (`steps_of`; `flat`: the op's arguments
    flattened): moved with the values by data
    movement, the largest of them through KEEPS_INTEGERS, their sum through ADDS_STEPS. None
    where the op is none of these, gives more than one tensor, or has an operand that is not
    integers by construction: a float constant that is no integer, a floating tensor
    `steps_of` does not know, or (unless `unknown_exact`) any tensor it does not know."""
    if not isinstance(out, torch.Tensor):
        return None
    if not movement and func not in KEEPS_INTEGERS and func not in ADDS_STEPS:
        return None
    if kwargs.get("alpha", 1) != 1:
        return None
    carried_in = []
    for a in flat:
        if isinstance(a, float) and not a.is_integer():
            return None
        if not isinstance(a, torch.Tensor) or a.dtype == torch.bool:
            continue
        own = steps_of(a)
        if own is None and (a.is_floating_point() or not unknown_exact):
            return None
        carried_in.append(own if own is not None else torch.zeros(a.shape, dtype=torch.float64,
                                                                  device=a.device))
    if not carried_in:
        return None
    if movement:
        try:
            moved = func(carried_in[0], *args[1:], **{k: v for k, v in kwargs.items()
                                                       if k != "dtype"})
        except (RuntimeError, TypeError, IndexError):
            return None
        if not isinstance(moved, torch.Tensor) or moved.shape != out.shape:
            return None
        return moved.to(torch.float64)
    spread = torch.broadcast_tensors(*carried_in, out.detach())[:-1]
    combined = torch.stack(spread).amax(0) if func in KEEPS_INTEGERS else sum(spread)
    return combined.to(torch.float64)


# Comparisons of computed values, whose masks flip where the two sides lie within their
# rounding errors of each other. Not equality: computed values are rarely equal.
COMPARISONS = {aten.gt.Tensor, aten.gt.Scalar, aten.ge.Tensor, aten.ge.Scalar,
               aten.lt.Tensor, aten.lt.Scalar, aten.le.Tensor, aten.le.Scalar}


def undefined_cast(func, x: torch.Tensor, error: torch.Tensor | None,
                   out: torch.Tensor) -> torch.Tensor | None:
    """Where a cast of floating `x` (worst-case `error`, None: as stored) to an integer format
    has no defined value: x is NaN or infinite, or its truncation may lie outside the format.
    C, C++ and CUDA leave such a conversion undefined, and implementations differ (torch's CPU
    gives INT_MIN or wraps, CUDA's cvt saturates and makes NaN 0, Triton's interpreter does
    what numpy does), so no value there is the reference's contract. None: not such a cast.
    A bool is defined for every value (x != 0)."""
    if func is not aten._to_copy.default or out.dtype == torch.bool or out.is_floating_point() \
            or out.is_complex() or not x.is_floating_point():
        return None
    info = torch.iinfo(out.dtype)
    value = x.detach().to(torch.float64)
    reach = torch.zeros_like(value) if error is None else error.to(value.device, torch.float64)
    low, high = (value - reach).trunc(), (value + reach).trunc()
    return ~torch.isfinite(value) | (low < info.min) | (high > info.max)


def is_step(func, out: Any, kwargs: dict) -> bool:
    if func in (aten.div.Tensor_mode, aten.div.Scalar_mode):
        return kwargs.get("rounding_mode") is not None  # None: a true division
    if func in STEPS or func in COMPARISONS:
        return True
    return (func is aten._to_copy.default and isinstance(out, torch.Tensor)
            and not out.is_floating_point() and not out.is_complex())
