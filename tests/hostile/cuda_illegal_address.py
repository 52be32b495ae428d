"""A Triton kernel that stores far outside its output: an illegal address on the GPU."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scatter(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs * (1 << 28), tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _scatter[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
        return y
