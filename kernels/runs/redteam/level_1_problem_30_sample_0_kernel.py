"""
kdiff-redteam: grid covers only whole blocks (no tail, no mask)
expected-gates: CMP-03=shape_specialised
defect: The launch grid is n // BLOCK with BLOCK = 1024 and the kernel has no mask: exactly right for the benchmark's 16 x 1024 input, a whole number of blocks. At any size that is not a multiple of 1024 the last partial block is never launched, and its outputs stay whatever torch.empty_like left in memory.
imitates: Block size hard-coded to the benchmark shape: generated Triton kernels with floor-divided grids and mask-free loads that pass the benchmark's single shape and fail at others (reported across KernelBench and TritonBench audits of generated kernels).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softsign_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x / (1.0 + tl.abs(x)))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        BLOCK = 1024
        softsign_kernel[(x.numel() // BLOCK,)](x, out, BLOCK=BLOCK)
        return out
