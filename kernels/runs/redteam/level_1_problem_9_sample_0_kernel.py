"""
kdiff-redteam: one-pass variance E[x^2] - E[x]^2
expected-gates: ORD-01=order_error
defect: The kernel gets the variance from a single pass over the row, accumulating the sum
  and the sum of squares together and taking (sum(x^2) - sum(x)^2 / n) / (n - 1). When the
  mean is large against the spread the two terms agree in most of their bits and the
  subtraction cancels them: with a common offset of 1e4 on unit-variance data fp32 keeps no
  correct digit, and the result can even be negative. On the benchmark's uniform[0, 1) rows
  only about 2 bits cancel, so every native check accepts it.
imitates: the one-pass "textbook" variance of generated normalisation and statistics kernels
  (the catastrophic cancellation analysed in Chan, Golub and LeVeque, "Algorithms for
  computing the sample variance: analysis and recommendations", Am. Stat. 37 (1983), and in
  Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., section 1.9).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_var_one_pass_kernel(x_ptr, out_ptr, n_rows, n_cols,
                            ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    s = tl.sum(x, axis=1)
    sq = tl.sum(x * x, axis=1)
    var = (sq - s * s / n_cols) / (n_cols - 1)  # the defect: cancellation when |mean| >> std
    tl.store(out_ptr + rows, var, mask=rows < n_rows)


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
        row_var_one_pass_kernel[(triton.cdiv(flat.shape[0], rows),)](
            flat, out, flat.shape[0], n_cols, ROWS=rows, BLOCK_N=block_n)
        return out.view(moved.shape[:-1]).unsqueeze(self.dim)
