"""
kdiff-control: Triton LayerScale (x * weight + bias), parameters built as the reference builds them
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_shift_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n, dim, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    col = offs % dim
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + col, mask=mask)
    b = tl.load(b_ptr + col, mask=mask)
    tl.store(out_ptr + offs, x * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 4096
        scale_shift_kernel[(triton.cdiv(n, BLOCK),)](
            x, self.weight.contiguous(), self.bias.contiguous(), out, n, x.shape[-1], BLOCK=BLOCK)
        return out
