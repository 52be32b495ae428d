"""
kdiff-redteam: layer norm with a one-pass variance E[x^2] - E[x]^2
expected-gates: ORD-01=order_error, PRC-03
defect: The kernel gets mean and variance from one pass over the row (sum and sum of squares)
  and takes var = E[x^2] - E[x]^2. When the mean is large against the spread, the two terms
  agree in most of their bits and the subtraction cancels them: with an offset of 1e4 on
  unit-variance data fp32 keeps no correct digit of the variance, and the result can even be
  negative (NaN after the square root). The benchmark's randn inputs have mean 0, where the
  formula is harmless, so every native check accepts it.
imitates: the one-pass "textbook" variance in generated normalisation kernels (the
  catastrophic cancellation analysed in Chan, Golub and LeVeque, "Algorithms for computing
  the sample variance", Am. Stat. 37 (1983), and in Higham, "Accuracy and Stability of
  Numerical Algorithms", 2nd ed., section 1.9).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_one_pass_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, eps,
                               ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=1) / n_cols
    mean_sq = tl.sum(x * x, axis=1) / n_cols
    var = mean_sq - mean * mean  # the defect: cancellation when |mean| >> std
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
    b = tl.load(b_ptr + cols, mask=cols < n_cols, other=0.0)
    y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + offs, y, mask=mask)


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
        layer_norm_one_pass_kernel[(triton.cdiv(flat.shape[0], rows),)](
            flat, self.ln.weight.contiguous(), self.ln.bias.contiguous(), y, flat.shape[0],
            n_cols, self.ln.eps, ROWS=rows, BLOCK_N=block_n)
        return y.view(x.shape)
