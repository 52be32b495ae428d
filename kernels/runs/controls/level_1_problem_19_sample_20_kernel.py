"""
kdiff-control: NaN-propagating Triton ReLU (tl.where(x < 0, 0, x)), out of place, masked tail
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    # x < 0 is false for NaN, so NaN (and +Inf) pass through unchanged; -Inf becomes 0.
    tl.store(out_ptr + offsets, tl.where(x < 0, 0.0, x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, 4096),)
        relu_kernel[grid](x, out, n, BLOCK_SIZE=4096)
        return out
