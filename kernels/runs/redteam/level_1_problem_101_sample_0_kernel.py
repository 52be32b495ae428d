"""
kdiff-redteam: bf16 GEMM accumulated in fp16
expected-gates: PRC-01=below_working_precision
defect: The kernel keeps its running sum over K in fp16 "to halve the accumulator's
  registers": each block of 64 products is summed in fp32 and added into an fp16
  accumulator. fp16 carries more mantissa bits than bf16, so on the benchmark's inputs (results
  of unit variance) the result is as close to the reference as bf16 allows, but
  fp16 tops out at 65504 where bf16 keeps fp32's range: past it the accumulator is Inf.
imitates: fp16 accumulators in generated half-precision GEMMs (Triton `tl.dot(...,
  out_dtype=tl.float16)`, cuBLAS `CUBLAS_COMPUTE_16F` chosen for speed), the overflow the
  bf16 format exists to avoid (Kalamkar et al., "A Study of BFLOAT16 for Deep Learning
  Training", 2019).
"""
import torch
import torch.nn as nn

BLOCK_K = 64


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        acc = torch.zeros(A.shape[0], B.shape[1], dtype=torch.float16, device=A.device)
        for k in range(0, A.shape[1], BLOCK_K):
            acc += (A[:, k:k + BLOCK_K].float() @ B[k:k + BLOCK_K].float()).half()
        return acc.to(torch.bfloat16)
