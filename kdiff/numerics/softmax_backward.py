"""Softmax's backward, traced as its formula rather than by finite differences.

aten's `_softmax_backward_data(g, y, dim, dtype)` is dx = y (g - s), s = sum_j y_j g_j along
`dim`. At an element where y is exact the two terms cancel exactly whatever g's error: a row
of one unmasked key (the first query of a causal mask) has y = 1, dx = g - g, and the slopes
along g and y vanish there, so the finite differences gave a bound of almost nothing. An honest
kernel forming the same quantity otherwise does not cancel: FlashAttention's backward (every
production one) forms s as rowsum(dO * O), equal to sum_j P_j (dO . V_j) in exact arithmetic,
whose error comes from the rounding of O and of the dot product, not from g's. So the fused op
is traced as the reference would be if it wrote the formula out, op by op.

Magnitude (oracle.py's rules, op by op): the product y_j g_j has |y_j| M_g,j + |g_j| M_y,j, the
sum s their sum along the row (M_s), the difference g - s has M_g + M_s, and the product with y
|y| (M_g + M_s) + |g - s| M_y. M_s bounds the rowsum(dO * O) form too: O's rounding is at most
u (|P| @ |V|) and enters through dO, u sum_k |dO_k| (|P| @ |V|)_k = u sum_j |P_j| M_g,j for
M_g = |dO| @ |V|^T, and the dot product's own rounding is at most u sum_k |dO_k| |O_k|, no
more. This dominates every slope the finite differences took (|J_g M_g|, |J_y M_y| and the root
mean square along a row), so they are not taken.

Depth: the formula adds the row's sum and three elementwise roundings, `dim`'s length + 3. And
the reassociated form puts both operands' chains on one: dO . (sum_j P_j V_j) rounds O (y's
chain, then the row's sum) and then the dot product that made g (g's chain), so the result's
depth is the sum of the operands' depths, not their maximum.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from kdiff.numerics.tolerance import own_scale, second_order

SOFTMAX_BACKWARD = torch.ops.aten._softmax_backward_data.default

# the product y_j g_j, the difference g - s and the product y (g - s): one rounding each
ELEMENTWISE_ROUNDINGS = 3


@dataclass(frozen=True)
class SoftmaxBackward:
    """One call of the fused op: its arguments (g, y, dim, dtype)."""

    args: tuple

    def magnitude(
        self,
        magnitude_of: Callable[[torch.Tensor], torch.Tensor],
        depth_of: Callable[[torch.Tensor], int],
        relative_error: Callable[[int], float],
    ) -> torch.Tensor:
        """|y| (M_g + M_s) + |g - s| M_y + S for dx = y (g - s), s = sum_j y_j g_j along the
        row, S the product's second order (tolerance.second_order: g - s cancels)."""
        g, y, dim = self.args[0].detach(), self.args[1].detach(), int(self.args[2])
        m_g, m_y = magnitude_of(g).to(g.device), magnitude_of(y).to(g.device)
        abs_g, abs_y = own_scale(g), own_scale(y)
        m_s = (abs_y * m_g + abs_g * m_y).sum(dim, keepdim=True)
        difference = own_scale(g - (g * y).sum(dim, keepdim=True))
        depth_difference = self.depth(depth_of) - 1  # all but the product with y
        both_errors = second_order(relative_error(depth_of(self.args[1])), m_y,
                                   relative_error(depth_difference), m_g + m_s)
        return abs_y * (m_g + m_s) + difference * m_y + both_errors

    def depth(self, depth_of: Callable[[torch.Tensor], int]) -> int:
        """Both operands' chains, the row's sum and the elementwise roundings."""
        g, y, dim = self.args[0], self.args[1], int(self.args[2])
        return depth_of(g) + depth_of(y) + int(g.shape[dim]) + ELEMENTWISE_ROUNDINGS


# The op traced as its formula, and how to read one call of it (oracle.WRITTEN_OUT)
FORMULAS = {SOFTMAX_BACKWARD: SoftmaxBackward}
