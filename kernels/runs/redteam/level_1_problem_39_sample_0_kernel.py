"""
kdiff-redteam: block size hard-coded to the benchmark's row length
expected-gates: CMP-03=shape_specialised
defect: BLOCK is the constant 1024, the benchmark's dim, and one program handles one row in one block. Rows of up to 1024 columns are masked correctly; longer rows are normalised by the norm of their first 1024 entries, and the columns beyond 1024 are never written (torch.empty_like leaves them as whatever memory held).
imitates: Block size hard-coded to the benchmark shape: generated Triton kernels that set BLOCK_SIZE to the problem's dimension instead of triton.next_power_of_2(n_cols) or a loop over blocks, correct only up to the benchmark size.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 1024  # = dim


@triton.jit
def l2_norm_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    norm = tl.sqrt(tl.sum(x * x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, x / norm, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, n_cols = x.shape
        out = torch.empty_like(x)
        l2_norm_kernel[(rows,)](x, out, n_cols, BLOCK=BLOCK_SIZE)
        return out
