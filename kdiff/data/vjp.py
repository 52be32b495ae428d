"""The VJP a backward problem (KDIFF_BACKWARD) is judged on, one definition for the judge's
reference, the float64 oracle and the candidate's worker."""
from __future__ import annotations

from typing import Any, Sequence

import torch


def differentiable(args: list[Any], positions: Sequence[int]) -> list[Any]:
    """`args` with those at `positions` (kdiff.data.differentiated) made leaves that require
    grad; the others are passed as they are: a candidate is asked no gradient for them."""
    chosen = set(positions)
    return [a.detach().requires_grad_() if i in chosen else a for i, a in enumerate(args)]


def input_gradients(outputs: list[Any], wrt: list[torch.Tensor],
                    cotangents: list[torch.Tensor]) -> list[torch.Tensor]:
    """The gradients of `outputs` along `cotangents` (one per output) against `wrt`, zeros
    where unused. Only outputs autograd can differentiate take part: an integer output
    (indices, counts) has no gradient and is judged as an output alone; with none the
    gradients are zeros."""
    pairs = [(o, c.to(o.device, o.dtype)) for o, c in zip(outputs, cotangents)
             if isinstance(o, torch.Tensor) and o.requires_grad]
    grads = (torch.autograd.grad([o for o, _ in pairs], wrt, [c for _, c in pairs],
                                 allow_unused=True) if pairs and wrt else [None] * len(wrt))
    return [torch.zeros_like(x) if g is None else g for g, x in zip(grads, wrt)]
