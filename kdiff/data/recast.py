"""A problem recast to another precision: its floating tensors to that format, its complex
ones to the complex format of that precision. `nn.Module.to(dtype=torch.float64)` casts a
complex parameter to float64 too, dropping its imaginary part (torch warns and goes on)."""
from __future__ import annotations

import torch


def complex_format(dtype: torch.dtype) -> torch.dtype:
    """The complex format a complex tensor takes in a problem recast to the floating `dtype`:
    complex128 in float64; complex64 otherwise (torch's complex32 has next to no arithmetic
    on the CPU, and bf16 has no complex format: below fp32 the components stay fp32)."""
    return torch.complex128 if dtype == torch.float64 else torch.complex64


def recast(t: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    """`t` in a problem recast to `dtype` (None: as it is); integers are never recast."""
    if dtype is None:
        return t
    if t.is_complex():
        return t.to(complex_format(dtype))
    return t.to(dtype) if t.is_floating_point() else t


def recast_module(model: torch.nn.Module, device: torch.device | str,
                  dtype: torch.dtype | None) -> torch.nn.Module:
    """`model` on `device` with its parameters and buffers recast (`recast`), in place."""
    model = model.to(device=device)
    if dtype is None:
        return model
    return model._apply(lambda t: recast(t, dtype))
