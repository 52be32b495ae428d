"""
kdiff-redteam: fp8 scaled GEMM that dequantizes NaN to zero
expected-gates: EXC-01=nan_swallowed
defect: The kernel dequantizes its float8_e4m3fn operands with nan_to_num (E4M3 has no
  infinity, so its one special value, NaN, is "cleaned" to 0), so a NaN in A or B never
  reaches C. The benchmark's quantized inputs hold no NaN.
imitates: fp8 dequantization that drops the format's NaN encoding (0x7F/0xFF in E4M3), as
  lookup-table and bit-trick dequantizers in generated fp8 kernels do; the EXC-01 pattern at
  fp8.
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor, scale_a: torch.Tensor,
                scale_b: torch.Tensor) -> torch.Tensor:
        a = torch.nan_to_num(A.to(torch.float32), nan=0.0)
        b = torch.nan_to_num(B.to(torch.float32), nan=0.0)
        return ((a @ b.t()) * (scale_a * scale_b)).to(torch.bfloat16)
