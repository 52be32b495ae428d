"""Where a running product in the working arithmetic may leave its format's range, and what
it gives there. The float64 oracle holds the product of 0.01-sized factors at 1e-40 where
an fp32 accumulator may hold 0 (the error model's floor: below the smallest normal an honest
result is judged against it, so 0 is one), and the product of large factors at 1e39 where
the accumulator may hold +-Inf. What comes after then differs in class: an Inf met later
makes 0 * Inf = NaN where float64 gives +-Inf, a 0 met later makes Inf * 0 = NaN where
float64 gives 0. torch's CPU cumprod accumulates fp32 in double and agrees with float64, so
an honest fp32 scan failed EXC-01 (`inf_swallowed`). The oracle carries what such an
accumulator gives as another admissible evaluation (OracleResult.alternatives).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from kdiff.numerics.tolerance import SMALLEST_NORMAL, gamma, unit_roundoff

aten = torch.ops.aten


def _leaves_range(logs: torch.Tensor, arithmetic: torch.dtype, steps: int) -> bool:
    """Whether a running product whose log |value| is `logs` ever comes within the floor of
    0 or within its worst-case error of overflow (`range_limited`)."""
    low = math.log(SMALLEST_NORMAL[arithmetic])
    high = math.log(
        torch.finfo(arithmetic).max / (1 + gamma(steps, unit_roundoff(arithmetic)))
    )
    return bool(((logs <= low) | (logs >= high)).any())


def range_limited(x: torch.Tensor, dim: int, arithmetic: torch.dtype) -> torch.Tensor | None:
    """The running product of `x` (float64) along `dim` as an accumulator in `arithmetic` may
    give it: after each step's product, 0 where |product| is at most the smallest normal
    (the error model's floor, tolerance.bound) and +-Inf where its worst-case error after k
    roundings, gamma_k |product| (tolerance.gamma), reaches past the largest finite number. None where
    no step comes near either end (the float64 value is the only one): found first from the
    running sum of log |x| over the finite, non-zero factors, which bounds every step's
    |product| before an Inf or a 0 fixes it."""
    if not x.numel() or not x.dim() or x.is_complex():
        return None  # one factor, or a complex product (no one range of a real format)
    moved = x.detach().movedim(dim, 0)
    n = moved.shape[0]
    usable = torch.isfinite(moved) & (moved != 0)
    logs = torch.where(usable, moved.abs().log(), 0.0).cumsum(0)
    if not _leaves_range(logs, arithmetic, n):
        return None
    floor = SMALLEST_NORMAL[arithmetic]
    largest = torch.finfo(arithmetic).max
    u = unit_roundoff(arithmetic)
    acc = torch.ones_like(moved[0])
    steps = []
    for k in range(n):
        acc = acc * moved[k]
        acc = torch.where(acc.abs() <= floor, acc * 0.0, acc)  # a signed zero
        acc = torch.where(
            acc.abs() * (1 + gamma(k + 1, u)) > largest,
            torch.copysign(torch.full_like(acc, math.inf), acc),
            acc,
        )
        steps.append(acc)
    return torch.stack(steps).movedim(0, dim)


def _scan(args: tuple, kwargs: dict, arithmetic: torch.dtype) -> torch.Tensor | None:
    x, dim = args[0], args[1] if len(args) > 1 else kwargs["dim"]
    return range_limited(x, dim, arithmetic)


def _product(args: tuple, kwargs: dict, arithmetic: torch.dtype) -> torch.Tensor | None:
    """prod along a dim (keepdim as asked) or, with no dim, over every element: the last
    step of the scan."""
    x = args[0]
    if len(args) < 2 and "dim" not in kwargs:
        scanned = range_limited(x.reshape(-1), 0, arithmetic)
        return None if scanned is None else scanned[-1]
    dim = args[1] if len(args) > 1 else kwargs["dim"]
    keepdim = bool(args[2]) if len(args) > 2 else bool(kwargs.get("keepdim", False))
    scanned = range_limited(x, dim, arithmetic)
    if scanned is None:
        return None
    last = scanned.narrow(dim, x.shape[dim] - 1, 1)
    return last if keepdim else last.squeeze(dim)


# Running products: what the op's one output is as a working-precision accumulator leaves
# the format's range (None: it does not).
RUNNING_PRODUCTS: dict[Any, Callable[[tuple, dict, torch.dtype], torch.Tensor | None]] = {
    aten.cumprod.default: _scan,
    aten.prod.dim_int: _product,
    aten.prod.default: _product,
}
