"""The window each output of a max-pooling op reads: the input positions it takes the largest
of, as flat indices into the pooled plane (what the op's index output points into), so that
a pick among a window's tied maxima can move to another of them (integers.TieSets).
max_pool1d and adaptive_max_pool1d reach the trace as their 2-D forms.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from kdiff.numerics.integers import OpenPicks, TieSets

aten = torch.ops.aten


def _per_dim(value, dims: int) -> list[int]:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return values * dims if len(values) == 1 else values


def _strided(arguments: dict, dims: int, size: list[int], out: list[int]
             ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """max_pool: output o reads o * stride - padding + k * dilation, k < kernel, inside the
    input (padding and a ceil_mode overhang read nothing)."""
    kernel = _per_dim(arguments["kernel_size"], dims)
    stride = _per_dim(arguments.get("stride") or kernel, dims)
    padding = _per_dim(arguments.get("padding", 0), dims)
    dilation = _per_dim(arguments.get("dilation", 1), dims)
    tables = []
    for d in range(dims):
        pos = (torch.arange(out[d]).unsqueeze(1) * stride[d] - padding[d]
               + torch.arange(kernel[d]).unsqueeze(0) * dilation[d])
        tables.append((pos, (pos >= 0) & (pos < size[d])))
    return tables


def _adaptive(arguments: dict, dims: int, size: list[int], out: list[int]
              ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """adaptive_max_pool: output o reads floor(o * in / out) .. ceil((o + 1) * in / out)."""
    tables = []
    for d in range(dims):
        o = torch.arange(out[d])
        start = torch.div(o * size[d], out[d], rounding_mode="floor")
        end = -torch.div(-(o + 1) * size[d], out[d], rounding_mode="floor")
        width = int((end - start).max()) if out[d] else 0
        pos = start.unsqueeze(1) + torch.arange(width).unsqueeze(0)
        tables.append((pos, pos < end.unsqueeze(1)))
    return tables


@dataclass(frozen=True)
class Pool:
    dims: int  # how many trailing dims it pools
    tables: Callable[[dict, int, list[int], list[int]], list[tuple[torch.Tensor, torch.Tensor]]]


POOLS = {
    aten.max_pool2d_with_indices.default: Pool(2, _strided),
    aten.max_pool3d_with_indices.default: Pool(3, _strided),
    aten.adaptive_max_pool2d.default: Pool(2, _adaptive),
    aten.adaptive_max_pool3d.default: Pool(3, _adaptive),
}


def windows(func, arguments: dict, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Per output of the pool `func` of `x` (whose index output is `index`): the flat plane
    positions of its window, -1 where a slot reads nothing; shaped (*out, K)."""
    dims = POOLS[func].dims
    size, out = list(x.shape[-dims:]), list(index.shape[-dims:])
    tables = POOLS[func].tables(arguments, dims, size, out)
    flat, valid = torch.zeros((), dtype=torch.long), torch.ones((), dtype=torch.bool)
    for d, (pos, ok) in enumerate(tables):
        # (out_0, .., out_{D-1}, k_0, .., k_{D-1}), dim d's table on its two axes
        shape = [1] * (2 * dims)
        shape[d], shape[dims + d] = pos.shape
        flat = flat + pos.view(shape) * math.prod(size[d + 1:])
        valid = valid & ok.view(shape)
    flat = torch.where(valid, flat, -1)
    return flat.reshape(*out, -1).to(x.device)


def pooled_picks(func, arguments: dict, x: torch.Tensor, error: torch.Tensor,
                 index: torch.Tensor) -> tuple[torch.Tensor, OpenPicks]:
    """Where the pool `func` of `x` (worst-case `error`) picked, into its index output
    `index`, a window element whose rank rests on roundings, and the other picks the error
    model admits there: integers.open_picks along each window."""
    dims = POOLS[func].dims
    window = windows(func, arguments, x, index)
    slots = window.clamp(min=0)
    values = x.detach().flatten(-dims)[..., slots]
    errors = error.to(x.device).flatten(-dims)[..., slots]
    absent = window < 0
    values, errors = values.masked_fill(absent, -math.inf), errors.masked_fill(absent, 0.0)
    picked = index.to(x.device).unsqueeze(-1)
    slot = (window == picked).long().argmax(-1, keepdim=True)
    open_, count, nth = TieSets(values, errors).picks(slot)
    full = window.expand(values.shape)

    def moved(m: int) -> torch.Tensor:
        other = full.gather(-1, nth(m))
        return torch.where(other >= 0, other, picked).squeeze(-1).to(index.device)

    return open_.squeeze(-1).to(index.device), OpenPicks(count, moved)
