"""
kdiff-control: layer norm with a two-pass (stable) variance (Triton)
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, eps,
                      ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=1) / n_cols
    # Second pass over the centred values: no cancellation between E[x^2] and E[x]^2.
    d = tl.where(mask, x - mean[:, None], 0.0)
    var = tl.sum(d * d, axis=1) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
    b = tl.load(b_ptr + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + offs, d * rstd[:, None] * w[None, :] + b[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = self.ln.weight.numel()
        flat = x.contiguous().view(-1, n_cols)
        y = torch.empty_like(flat)
        block_n = triton.next_power_of_2(n_cols)
        rows = max(1, min(16, 4096 // block_n))
        layer_norm_kernel[(triton.cdiv(flat.shape[0], rows),)](
            flat, self.ln.weight.contiguous(), self.ln.bias.contiguous(), y, flat.shape[0],
            n_cols, self.ln.eps, ROWS=rows, BLOCK_N=block_n)
        return y.view(x.shape)
