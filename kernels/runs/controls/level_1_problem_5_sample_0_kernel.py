"""
kdiff-control: product reduction in fp32 (Triton, tl.reduce with a multiply)
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def row_prod_kernel(x_ptr, out_ptr, n_rows, n_cols,
                    ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.full((ROWS, BLOCK_N), 1.0, dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        c = start + cols
        mask = (rows[:, None] < n_rows) & (c[None, :] < n_cols)
        acc *= tl.load(x_ptr + rows[:, None] * n_cols + c[None, :], mask=mask, other=1.0)
    tl.store(out_ptr + rows, tl.reduce(acc, 1, _mul), mask=rows < n_rows)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        moved = x.movedim(self.dim, -1).contiguous()
        n_cols = moved.shape[-1]
        flat = moved.view(-1, n_cols)
        out = torch.empty(flat.shape[0], device=x.device, dtype=x.dtype)
        block_n = min(1024, triton.next_power_of_2(n_cols))
        rows = max(1, min(64, 4096 // block_n))
        row_prod_kernel[(triton.cdiv(flat.shape[0], rows),)](flat, out, flat.shape[0], n_cols,
                                                              ROWS=rows, BLOCK_N=block_n)
        return out.view(moved.shape[:-1])
