"""The class of a value as the non-finite gate judges it: finite, NaN, +Inf or -Inf. Beside
the gate (EXC-01), the oracle asks it where another admissible evaluation of an output
(`OracleResult.alternatives`) gives an element another class than its own."""

from __future__ import annotations

import math

import torch

from kdiff.numerics import tolerance

FINITE, NAN, POS_INF, NEG_INF = 0, 1, 2, 3
CLASS_NAMES = {FINITE: "finite", NAN: "nan", POS_INF: "+inf", NEG_INF: "-inf"}


def classify(t: torch.Tensor) -> torch.Tensor:
    """Per element: FINITE, NAN, POS_INF or NEG_INF (int8), on the CPU. Non-floating tensors
    are finite. A complex element is FINITE or, with any component not finite, NAN: which of
    its components is NaN or Inf is its formula's choice (the textbook product makes NaN of
    Inf * 0 where C99's Annex G keeps the infinity, Gauss's three-product one NaN of Inf -
    Inf), so only whether it is finite is judged: a swallowed one is `nan_swallowed`."""
    return classes(t.detach().cpu())


def classes(t: torch.Tensor) -> torch.Tensor:
    """`classify` on `t`'s own device: what the oracle compares without a copy to the host."""
    if t.is_complex():
        return (~torch.isfinite(t)).to(torch.int8) * NAN
    if not t.is_floating_point():
        return torch.zeros(t.shape, dtype=torch.int8, device=t.device)
    x = tolerance.comparable(t)
    return (
        torch.isnan(x).to(torch.int8) * NAN
        + (x == math.inf).to(torch.int8) * POS_INF
        + (x == -math.inf).to(torch.int8) * NEG_INF
    )
