"""
kdiff-control: variance by the corrected two-pass algorithm, scaled against overflow (Triton)
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_var_kernel(x_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    mean = tl.sum(x, axis=1) / n_cols
    d = tl.where(mask, x - mean[:, None], 0.0)
    # Scale by the largest deviation so that the squares cannot overflow (as BLAS nrm2 does);
    # a NaN deviation stays NaN through the division.
    scale = tl.max(tl.abs(d), axis=1)
    scale = tl.where(scale > 0.0, scale, 1.0)
    e = d / scale[:, None]
    # Corrected two-pass (Chan, Golub and LeVeque 1983): subtracting (sum e)^2 / n removes the
    # first-order effect of the rounding error in the mean.
    s = tl.sum(e, axis=1)
    m2 = tl.sum(e * e, axis=1) - s * s / n_cols
    # Bessel's correction, as torch.var's default (n = 1 gives 0/0 = NaN there too).
    tl.store(out_ptr + rows, m2 / (n_cols - 1) * scale * scale, mask=rows < n_rows)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        moved = x.movedim(self.dim, -1).contiguous()
        n_cols = moved.shape[-1]
        flat = moved.view(-1, n_cols)
        out = torch.empty(flat.shape[0], device=x.device, dtype=x.dtype)
        block_n = triton.next_power_of_2(n_cols)
        rows = max(1, min(16, 4096 // block_n))
        row_var_kernel[(triton.cdiv(flat.shape[0], rows),)](flat, out, flat.shape[0], n_cols,
                                                             ROWS=rows, BLOCK_N=block_n)
        return out.view(moved.shape[:-1]).unsqueeze(self.dim)
