"""
kdiff-redteam: row-major layout assumed, no .contiguous()
expected-gates: CMP-03=noncontiguous_unsupported
defect: The kernel addresses row r, column c at x_ptr + r * n_cols + c, and the wrapper hands it the input as it comes, without .contiguous(). The benchmark's inputs are freshly allocated row-major tensors, so the addressing holds there; a transposed or otherwise strided input of the same shape is read in the wrong order and every row is normalised with the wrong values.
imitates: Triton wrappers that pass x.data_ptr() without .contiguous() or stride arguments, a recurrent bug in generated kernels (TritonBench-G and KernelBench audits; "forgot to handle non-contiguous inputs" fixes in kernel libraries).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l1_norm_kernel(x_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offsets = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    total = tl.sum(tl.abs(x), axis=1)
    tl.store(out_ptr + offsets, x / total[:, None], mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, n_cols = x.shape
        out = torch.empty(rows, n_cols, dtype=x.dtype, device=x.device)
        block = triton.next_power_of_2(n_cols)
        per_program = max(1, min(16, 4096 // block))  # a [ROWS, BLOCK] tile of 4096 at most
        l1_norm_kernel[(triton.cdiv(rows, per_program),)](x, out, rows, n_cols,
                                                          ROWS=per_program, BLOCK=block)
        return out
