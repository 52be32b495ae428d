"""
kdiff-control: Triton Frobenius normalisation (block partial sums of squares, then a scaling pass)
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_squares_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(x * x, axis=0))


@triton.jit
def scale_kernel(x_ptr, out_ptr, norm_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    norm = tl.load(norm_ptr)
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x / norm, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = x.numel()
        BLOCK = 4096
        blocks = triton.cdiv(n, BLOCK)
        partial = torch.empty(blocks, dtype=x.dtype, device=x.device)
        sum_squares_kernel[(blocks,)](x, partial, n, BLOCK=BLOCK)
        norm = partial.sum().sqrt().reshape(1)
        out = torch.empty_like(x)
        scale_kernel[(blocks,)](x, out, norm, n, BLOCK=BLOCK)
        return out
