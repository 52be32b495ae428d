"""Kinks of a VJP: the subgradient a backward pass may take where its function bends.

Where a function the reference differentiates is not differentiable (ReLU and |x| at 0, a
clamp or hardtanh at a bound, leaky ReLU at 0, the larger of two equal operands), its
gradient is any element of the subdifferential there, the hull of its one-sided derivatives.
Autograd's formula takes one: PyTorch the subgradient of least norm (0 for ReLU and |x| at 0,
half the gradient to each of two equal operands of a maximum). An honest backward may take
another: Liger-Kernel's total variation distance takes -1/2 where p = q, a ReLU backward
written `x >= 0` takes the whole gradient at 0. So in the backward pass an element whose
operand meets a kink, exactly or within its worst-case error, is open by how far the other
one-sided values lie from the formula's: the jump of the backward op's result there. The
forward pass is untouched: `x > 0` at x = 0 is False by definition.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from kdiff.numerics.integers import COMPARISONS

aten = torch.ops.aten

# Differentiated by autograd from their result (threshold_backward(grad, result, 0)).
RELU = {aten.relu.default, aten.relu_.default}

# Where an operand meets a kink at a point: within its worst-case error of it (the tracer's,
# which also knows ReLU's input behind its result: autograd differentiates ReLU from the
# result, which is 0 wherever the input was not positive).
Meets = Callable[[Any, Any], torch.Tensor]


def within(x: Any, point: Any, reach: Any) -> torch.Tensor:
    """Where `x`, within `reach` of its value, meets the kink at `point`."""
    x = torch.as_tensor(x).detach().to(torch.float64)
    point = torch.as_tensor(point).detach().to(x.device, torch.float64)
    return (x - point).abs() <= torch.as_tensor(reach).to(x.device, torch.float64)


def _gradient(grad: torch.Tensor) -> torch.Tensor:
    return grad.detach().abs().to(torch.float64)


def jump(func, args: tuple, meets: Meets) -> torch.Tensor | None:
    """Per element of a backward op's result, how far another subgradient may lie from the
    formula's where its operand meets a kink (0 elsewhere); None for an op without kinks.
    A comparison's result is a mask: its jump is the flip, 1, and what the mask selects
    between carries it on (a `where`'s operands apart)."""
    if func is aten.threshold_backward.default:  # ReLU: [0, g] at the threshold
        grad, x, threshold = args[:3]
        return torch.where(meets(x, threshold), _gradient(grad), 0.0)
    if func is aten.hardtanh_backward.default:  # clamp, hardtanh, ReLU6: [0, g] at a bound
        grad, x, low, high = args[:4]
        bent = meets(x, low) | meets(x, high)
        return torch.where(bent, _gradient(grad), 0.0)
    if func is aten.leaky_relu_backward.default:  # [slope g, g] at 0
        grad, x, slope = args[:3]
        return torch.where(meets(x, 0.0), _gradient(grad) * abs(1 - slope), 0.0)
    if func in (aten.sgn.default, aten.sign.default):  # |x|'s derivative: [-1, 1] at 0
        x = args[0]
        return torch.where(meets(x, 0.0), 1.0, 0.0).to(torch.float64)
    if func in COMPARISONS:  # a mask choosing between one-sided derivatives
        a, b = args[:2]
        return torch.where(meets(a, b), 1.0, 0.0).to(torch.float64)
    return None
