"""LayerNorm's backward, traced as its formula rather than by finite differences.

aten's `native_layer_norm_backward(dy, x, shape, mean, rstd, w, b, mask)` gives
dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy w and xhat = (x - mean) rstd, the means
over the normalised dims; dw = sum over the rows of dy xhat, db that of dy. dx is a difference
of terms that cancel wherever the cotangent has a component equal along a row, or one along
xhat: a LayerNorm pooled over its features (`norm(x).sum(-1)`) gets g = c w, and at w = 1 (as
built) dx is exactly 0. An honest fp32 kernel computing the formula errs there by the rounding
of mean(g) and of mean(g xhat), u rstd |g| at least; the finite differences took |J M| along
each operand's magnitudes, which cancel exactly as dx does (M_dy is |c|, equal along the row),
and left a bound of nothing: such a kernel failed five value gates at 6.7x, and at inputs
x 1e-19 (rstd = eps^-1/2) PRC-03 at 6.4e+33x. So the op is traced as the reference would be if
it wrote the formula out, op by op.

Magnitude (oracle.py's rules, op by op: a product |a| M_b + |b| M_a, a sum or difference the sum
of its operands' magnitudes, a mean their mean):
  M_g    = M_dy |w| + |dy| M_w
  M_xhat = (M_x + M_mean) rstd + |x - mean| M_rstd
  M_c1   = mean(|g| M_xhat + |xhat| M_g),  c1 = mean(g xhat)
  M_c2   = mean(M_g),                      c2 = mean(g)
  M_dx   = rstd (M_g + M_c2 + |xhat| M_c1 + |c1| M_xhat) + |g - c2 - xhat c1| M_rstd
  M_dw   = sum over the rows of |dy| M_xhat + |xhat| M_dy,  M_db = that of M_dy
Each dominates the slope |J M| along every operand, which is a signed sum of the same terms,
so no finite difference is taken. A kernel recomputing xhat from the saved output rather than
from x is covered too: M_mean and M_rstd carry the forward's error, which is the output's.

Depth: the chains of the operands (the deepest, the saved statistics carrying the forward's
reduction) plus the longer of the two reductions (the normalised dims for dx, the rows for dw
and db) and dx's elementwise roundings.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

LAYER_NORM_BACKWARD = torch.ops.aten.native_layer_norm_backward.default

# dx's roundings beside its row sums: g = dy w, x - mean, times rstd, g xhat, the two means'
# divisions, xhat c1, the two subtractions and the product with rstd
ELEMENTWISE_ROUNDINGS = 10


def _finite_abs(t: torch.Tensor) -> torch.Tensor:
    """|t|, 0 where t is not finite: a non-finite value is exact (oracle._own_scale)."""
    return torch.where(torch.isfinite(t), t.abs(), 0.0)


def _dims(args: tuple) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The normalised dims and the row dims of the input."""
    x, normalized = args[1], len(args[2])
    return (tuple(range(x.dim() - normalized, x.dim())), tuple(range(x.dim() - normalized)))


def magnitude(
    args: tuple, magnitude_of: Callable[[torch.Tensor], torch.Tensor]
) -> tuple[torch.Tensor | None, ...]:
    """(M_dx, M_dw, M_db), None for a gradient the op's output mask leaves out."""
    dy, x, _, mean, rstd, weight, _, mask = args
    features, rows = _dims(args)
    dy, x, mean, rstd = dy.detach(), x.detach(), mean.detach(), rstd.detach()
    m_dy, m_x, m_mean, m_rstd = (magnitude_of(t).to(dy.device) for t in (dy, x, mean, rstd))
    if weight is None:
        g, m_g = dy, m_dy
    else:
        w = weight.detach()
        g = dy * w
        m_g = m_dy * _finite_abs(w) + _finite_abs(dy) * magnitude_of(w).to(dy.device)
    abs_rstd = _finite_abs(rstd)
    centred = x - mean
    xhat = centred * rstd
    abs_xhat = _finite_abs(xhat)
    m_xhat = (m_x + m_mean) * abs_rstd + _finite_abs(centred) * m_rstd
    c1 = (g * xhat).mean(features, keepdim=True)
    c2 = g.mean(features, keepdim=True)
    m_c1 = (_finite_abs(g) * m_xhat + abs_xhat * m_g).mean(features, keepdim=True)
    m_c2 = m_g.mean(features, keepdim=True)
    inner = g - c2 - xhat * c1
    m_dx = (
        abs_rstd * (m_g + m_c2 + abs_xhat * m_c1 + _finite_abs(c1) * m_xhat)
        + _finite_abs(inner) * m_rstd
    )
    m_dw = (
        (_finite_abs(dy) * m_xhat + abs_xhat * m_dy).sum(rows)
        if rows
        else _finite_abs(dy) * m_xhat + abs_xhat * m_dy
    )
    m_db = m_dy.sum(rows) if rows else m_dy
    return tuple(m if wanted else None for m, wanted in zip((m_dx, m_dw, m_db), mask))


def depth(args: tuple, depth_of: Callable[[torch.Tensor], int]) -> int:
    """The result's depth: the deepest operand's chain, the longer reduction and dx's
    elementwise roundings."""
    features, rows = _dims(args)
    x = args[1]
    longest = max(math.prod(x.shape[d] for d in features), math.prod(x.shape[d] for d in rows))
    operands = [a for a in (args[0], x, args[3], args[4], args[5]) if a is not None]
    return max(depth_of(a) for a in operands) + longest + ELEMENTWISE_ROUNDINGS
