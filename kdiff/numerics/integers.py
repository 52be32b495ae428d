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


def rank_ambiguous(values: torch.Tensor, error: torch.Tensor, dim: int) -> torch.Tensor:
    """Per element: whether another element along `dim` lies within both elements'
    worst-case error (`error`) of it, so that their order rests on roundings (an exact tie
    at zero error included). Sorted, an element's interval meets an earlier one's exactly
    when the earlier upper ends reach its lower end, and a later one's when the later lower
    ends reach its upper end: two running extremes, not all pairs."""
    ordered, order = values.detach().sort(dim)
    e = error.gather(dim, order)
    low, high = ordered - e, ordered + e
    n = ordered.shape[dim]
    if n < 2:
        return torch.zeros(values.shape, dtype=torch.bool, device=values.device)
    before = high.narrow(dim, 0, n - 1).cummax(dim).values  # for ranks 1..n-1
    after = low.narrow(dim, 1, n - 1).flip(dim).cummin(dim).values.flip(dim)  # ranks 0..n-2
    meets = torch.zeros(ordered.shape, dtype=torch.bool, device=values.device)
    meets.narrow(dim, 1, n - 1).logical_or_(before >= low.narrow(dim, 1, n - 1))
    meets.narrow(dim, 0, n - 1).logical_or_(after <= high.narrow(dim, 0, n - 1))
    return torch.zeros_like(meets).scatter(dim, order, meets)


def near_ties(values: torch.Tensor, error: torch.Tensor, index: torch.Tensor,
              dim: int | None) -> torch.Tensor:
    """Where an index output `index` (shaped as its op returns it) picked, along `dim` of
    `values` (None: over all elements), an element whose rank rests on roundings
    (rank_ambiguous)."""
    if dim is None:
        values, error, dim = values.reshape(-1), error.reshape(-1), 0
    dim %= max(values.dim(), 1)
    if values.dim() == 0:
        return torch.zeros(index.shape, dtype=torch.bool, device=index.device)
    ambiguous = rank_ambiguous(values, error, dim)
    picked = index.reshape(1) if index.dim() == 0 else index
    if picked.dim() < values.dim():  # keepdim=False
        picked = picked.unsqueeze(dim)
    return ambiguous.gather(dim, picked.to(ambiguous.device)).reshape(index.shape)


def moves(a: torch.Tensor, where: torch.Tensor, steps: torch.Tensor, picks: bool,
           count: int | None) -> list[torch.Tensor]:
    """`a` moved where `where` holds, both ways: a mask flipped; an open pick to a neighbour
    inside the indices' range (0 .. count - 1, else the picks' own); a stepped integer by its
    number of steps, inside its format."""
    if a.dtype == torch.bool:
        return [torch.where(where, ~a, a)]
    wide = a.long()
    if picks:
        top = count - 1 if count is not None else int(a.max())
        low = min(int(a.min()), 0)
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
    # how many values an index may take (a decision's dim size): another honest pick is one
    # of 0..count-1; None where unknown (then the picks' own range stands in)
    count: int | None = None


# Step functions of a floating operand: where the operand lies within its rounding error of
# a step, an honest implementation may land on the other side of it. Besides these, any
# cast of a floating tensor to an integer format (truncation).
INTEGRAL_STEPS = {aten.round.default, aten.floor.default, aten.ceil.default,
                  aten.trunc.default, aten.sign.default, aten.floor_divide.default,
                  aten.div.Tensor_mode, aten.div.Scalar_mode}
# Steps of two operands (the dividend's and the divisor's errors both move the step). Not
# remainder and fmod: where they wrap by the divisor, the output is periodic, and a problem
# declares it so (KDIFF_PERIODIC_OUTPUTS) to have it judged around the circle.
BINARY_STEPS = {aten.floor_divide.default, aten.div.Tensor_mode, aten.div.Scalar_mode}
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


def is_step(func, out: Any, kwargs: dict) -> bool:
    if func in (aten.div.Tensor_mode, aten.div.Scalar_mode):
        return kwargs.get("rounding_mode") is not None  # None: a true division
    if func in STEPS or func in COMPARISONS:
        return True
    return (func is aten._to_copy.default and isinstance(out, torch.Tensor)
            and not out.is_floating_point() and not out.is_complex())
