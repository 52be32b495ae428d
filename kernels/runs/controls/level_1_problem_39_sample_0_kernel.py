"""
kdiff-control: Triton L2 normalisation, block sized to the row at run time
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l2_norm_kernel(x_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    norm = tl.sqrt(tl.sum(x * x, axis=1))
    tl.store(out_ptr + offs, x / norm[:, None], mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, n_cols = x.shape
        out = torch.empty_like(x)
        block = triton.next_power_of_2(n_cols)
        per_program = max(1, min(16, 4096 // block))  # a few thousand elements per program
        l2_norm_kernel[(triton.cdiv(rows, per_program),)](x, out, rows, n_cols, ROWS=per_program,
                                                          BLOCK=block)
        return out
