"""The fallback decision: whether any value of the chunked results is NaN or +-Inf, kept on
the device as a one-element int32 tensor that the token-by-token kernels read (chunk.py)."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kdiff.kernels.gdn.tile_ops import count_nonfinite

# Elements per program: (1, 8192, 96)'s final state (1.5 M fp32) in 384 programs.
FLAG_BLOCK = 4096


@triton.jit
def nonfinite_any_kernel(x, n, flag, BLOCK: tl.constexpr):
    """flag[0] = 1 where some x[i], i < n, is NaN or +-Inf; untouched otherwise. Sub-fp32
    values are widened first (exact; the interpreter holds bf16 as bit patterns)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    vals = tl.load(x + offs, mask=mask, other=0.0)
    if x.dtype.element_ty != tl.float64:
        vals = vals.to(tl.float32)
    tl.atomic_max(flag, 1, mask=count_nonfinite(vals, mask) > 0)


def fallback_flag(*tensors) -> torch.Tensor:
    """A one-element int32 tensor on the tensors' device: 1 where some element of the given
    tensors (None or empty skipped) is not finite, else 0. One launch per tensor and one to
    zero the flag, no host sync. (`isfinite(t).all()` costs five elementwise and reduction
    kernels: 0.39 ms of a 2.8 ms forward at (1, 8192, 96) on the H200; a min/max per tensor
    with its stack, cat and isfinite, nine launches for the forward's two tensors.)"""
    present = [t for t in tensors if t is not None]
    flag = torch.zeros(1, dtype=torch.int32, device=present[0].device)
    for t in present:
        if t.numel():
            flat = t.reshape(-1)  # a copy only for a strided view (the tests' case)
            nonfinite_any_kernel[(triton.cdiv(flat.numel(), FLAG_BLOCK),)](
                flat, flat.numel(), flag, BLOCK=FLAG_BLOCK)
    return flag
