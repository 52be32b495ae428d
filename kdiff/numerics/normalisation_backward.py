"""The backwards of LayerNorm, GroupNorm and training-mode BatchNorm, traced as their formula
rather than by finite differences.

Each normalises x over groups (a LayerNorm's row, a GroupNorm's group of channels and pixels, a
BatchNorm channel's batch and pixels) and its backward is, per group,
dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy w and xhat = (x - mean) rstd; dw sums
dy xhat over everything but the weight's own dims, db sums dy. dx is a difference of terms that
cancel wherever the cotangent has a component equal along a group, or one along xhat: a norm
pooled over its groups (`norm(x).sum(-1)` after a LayerNorm, per channel after a BatchNorm) gets
g = c w, and at w = 1 (as built) dx is exactly 0. An honest fp32 kernel computing the formula
errs there by the rounding of mean(g) and of mean(g xhat), u rstd |g| at least; the finite
differences took |J M| along each operand's magnitudes, which cancel exactly as dx does (M_dy
is |c|, equal along the group), and left a bound of nothing: an honest LayerNorm backward failed
five value gates at 6.7x and PRC-03 at 6.4e+33x (inputs x 1e-19, rstd = eps^-1/2), a GroupNorm
one six at up to 30x, and torch's own BatchNorm backward, the judge's fp32 reference, used 35x
its bound (every value gate under-specified). So the op is traced as the reference would be if
it wrote the formula out, op by op.

Magnitude (oracle.py's rules, op by op: a product |a| M_b + |b| M_a, a sum or difference the sum
of its operands' magnitudes, a mean their mean):
  M_g    = M_dy |w| + |dy| M_w
  M_xhat = (M_x + M_mean) rstd + |x - mean| M_rstd
  M_c1   = mean(|g| M_xhat + |xhat| M_g),  c1 = mean(g xhat)
  M_c2   = mean(M_g),                      c2 = mean(g)
  M_dx   = rstd (M_g + M_c2 + |xhat| M_c1 + |c1| M_xhat + S) + |g - c2 - xhat c1| M_rstd
           with S = tolerance.second_order of xhat c1: both cancel (c1 to 0 when g = c w,
           xhat at an element equal to its group's mean), and the product of their errors
           is what a kernel errs by there
  M_dw   = the sum of |dy| M_xhat + |xhat| M_dy,  M_db = that of M_dy
Each dominates the slope |J M| along every operand, which is a signed sum of the same terms, so
no finite difference is taken. A kernel recomputing xhat from the saved output rather than from
x is covered too: M_mean and M_rstd carry the forward's error, which is the output's.

Depth: the chains of the operands (the deepest; the saved statistics carry the forward's
reduction) plus the longer of the two reductions (the group for dx, the weight's sum for dw and
db) and dx's elementwise roundings.

BatchNorm in eval mode normalises by its running statistics: nothing mixes, nothing cancels,
and its backward keeps the finite differences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from kdiff.numerics.tolerance import own_scale, second_order

aten = torch.ops.aten

# dx's roundings beside its group sums: g = dy w, x - mean, times rstd, g xhat, the two means'
# divisions, xhat c1, the two subtractions and the product with rstd
ELEMENTWISE_ROUNDINGS = 10
# xhat's: x - mean, times rstd; c1's beyond xhat and its group sum: g = dy w, g xhat, the mean's
# division
XHAT_ROUNDINGS = 2
C1_ROUNDINGS = 3


@dataclass(frozen=True)
class GroupedBackward:
    """One call of a normalisation's backward, its operands read in a view where every group
    lies along `reduced` and the statistics and the weight broadcast against x."""

    dy: torch.Tensor
    x: torch.Tensor
    mean: torch.Tensor
    rstd: torch.Tensor
    weight: torch.Tensor | None
    view_x: Callable[[torch.Tensor], torch.Tensor]  # x, dy and their magnitudes
    view_statistic: Callable[[torch.Tensor], torch.Tensor]
    view_weight: Callable[[torch.Tensor], torch.Tensor]
    reduced: tuple[int, ...]  # a group, in the view
    summed: tuple[int, ...]  # what dw and db sum over, in the view
    weight_shape: tuple[int, ...]  # dw's and db's
    mask: tuple[bool, ...]  # which of dx, dw, db the op computes

    def magnitude(
        self,
        magnitude_of: Callable[[torch.Tensor], torch.Tensor],
        depth_of: Callable[[torch.Tensor], int],
        relative_error: Callable[[int], float],
    ) -> tuple[torch.Tensor | None, ...]:
        """(M_dx, M_dw, M_db), None for a gradient the op's output mask leaves out;
        `relative_error` is tolerance.relative_error at a depth, in the op's arithmetic and
        with its operands' storage roundings."""
        device = self.dy.device

        def viewed(
            t: torch.Tensor, view: Callable[[torch.Tensor], torch.Tensor]
        ) -> tuple[torch.Tensor, torch.Tensor]:
            return view(t.detach()), view(magnitude_of(t).to(device))

        dy, m_dy = viewed(self.dy, self.view_x)
        x, m_x = viewed(self.x, self.view_x)
        mean, m_mean = viewed(self.mean, self.view_statistic)
        rstd, m_rstd = viewed(self.rstd, self.view_statistic)
        if self.weight is None:
            g, m_g = dy, m_dy
        else:
            w, m_w = viewed(self.weight, self.view_weight)
            g, m_g = dy * w, m_dy * own_scale(w) + own_scale(dy) * m_w
        abs_rstd = own_scale(rstd)
        centred = x - mean
        xhat = centred * rstd
        abs_xhat = own_scale(xhat)
        m_xhat = (m_x + m_mean) * abs_rstd + own_scale(centred) * m_rstd
        c1 = (g * xhat).mean(self.reduced, keepdim=True)
        c2 = g.mean(self.reduced, keepdim=True)
        m_c1 = (own_scale(g) * m_xhat + abs_xhat * m_g).mean(self.reduced, keepdim=True)
        m_c2 = m_g.mean(self.reduced, keepdim=True)
        inner = g - c2 - xhat * c1
        depth_xhat = max(depth_of(t) for t in (self.x, self.mean, self.rstd)) + XHAT_ROUNDINGS
        depth_c1 = max(depth_xhat, depth_of(self.dy)) + self._group() + C1_ROUNDINGS
        both_errors = second_order(relative_error(depth_xhat), m_xhat,
                                   relative_error(depth_c1), m_c1)
        m_dx = (
            abs_rstd * (m_g + m_c2 + abs_xhat * m_c1 + own_scale(c1) * m_xhat + both_errors)
            + own_scale(inner) * m_rstd
        )
        m_dw = (own_scale(dy) * m_xhat + abs_xhat * m_dy).sum(self.summed)
        m_db = m_dy.sum(self.summed)
        found = (
            m_dx.reshape(self.x.shape),
            m_dw.reshape(self.weight_shape),
            m_db.reshape(self.weight_shape),
        )
        return tuple(m if wanted else None for m, wanted in zip(found, self.mask))

    def _group(self) -> int:
        shape = self.view_x(self.x).shape
        return math.prod(shape[d] for d in self.reduced)

    def depth(self, depth_of: Callable[[torch.Tensor], int]) -> int:
        """The deepest operand's chain, the longer reduction and dx's elementwise roundings."""
        shape = self.view_x(self.x).shape
        longest = max(self._group(), math.prod(shape[d] for d in self.summed))
        operands = [self.dy, self.x, self.mean, self.rstd]
        operands += [self.weight] if self.weight is not None else []
        return max(depth_of(t) for t in operands) + longest + ELEMENTWISE_ROUNDINGS


def _same(t: torch.Tensor) -> torch.Tensor:
    return t


def layer_norm(args: tuple) -> GroupedBackward:
    """native_layer_norm_backward(dy, x, normalized_shape, mean, rstd, w, b, mask): groups
    are the trailing dims; mean and rstd keep them as 1s, w spans them."""
    dy, x, normalized, mean, rstd, weight, _, mask = args
    rows = x.dim() - len(normalized)
    return GroupedBackward(
        dy,
        x,
        mean,
        rstd,
        weight,
        _same,
        _same,
        _same,
        reduced=tuple(range(rows, x.dim())),
        summed=tuple(range(rows)),
        weight_shape=tuple(normalized),
        mask=tuple(mask),
    )


def group_norm(args: tuple) -> GroupedBackward:
    """native_group_norm_backward(dy, x, mean, rstd, w, N, C, HxW, groups, mask): x viewed
    as (N, groups, C / groups, HxW), mean and rstd (N, groups), w (C) a channel's."""
    dy, x, mean, rstd, weight, n, c, pixels, groups, mask = args
    n, c, pixels, groups = int(n), int(c), int(pixels), int(groups)
    return GroupedBackward(
        dy,
        x,
        mean,
        rstd,
        weight,
        view_x=lambda t: t.reshape(n, groups, c // groups, pixels),
        view_statistic=lambda t: t.reshape(n, groups, 1, 1),
        view_weight=lambda t: t.reshape(1, groups, c // groups, 1),
        reduced=(2, 3),
        summed=(0, 3),
        weight_shape=(c,),
        mask=tuple(mask),
    )


def batch_norm(args: tuple) -> GroupedBackward | None:
    """native_batch_norm_backward(dy, x, w, running_mean, running_var, save_mean,
    save_invstd, train, eps, mask): in training, a channel's group is its batch and pixels
    (x viewed as (N, C, pixels)), the saved statistics and w (C) a channel's. None in eval
    mode: nothing mixes there."""
    dy, x, weight, _, _, mean, invstd, train, _, mask = args
    if not train or mean is None or invstd is None:
        return None
    n, c = x.shape[0], x.shape[1]

    def by_channel(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(1, c, 1)

    return GroupedBackward(
        dy,
        x,
        mean,
        invstd,
        weight,
        view_x=lambda t: t.reshape(n, c, -1),
        view_statistic=by_channel,
        view_weight=by_channel,
        reduced=(0, 2),
        summed=(0, 2),
        weight_shape=(c,),
        mask=tuple(mask),
    )


# The ops traced as their formula, and how to read one call of each (oracle.WRITTEN_OUT)
FORMULAS = {
    aten.native_layer_norm_backward.default: layer_norm,
    aten.native_group_norm_backward.default: group_norm,
    aten.native_batch_norm_backward.default: batch_norm,
}
