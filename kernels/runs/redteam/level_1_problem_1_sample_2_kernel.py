"""
kdiff-redteam: fp32 matmul with TF32 operands (tl.dot's default precision)
expected-gates: PRC-01=below_working_precision
defect: On NVIDIA GPUs tl.dot on fp32 operands defaults to input_precision="tf32"
  (allow_tf32=True in older Triton): each operand is rounded to TF32's 10 explicit mantissa
  bits (u = 2^-11) before the products, which are then accumulated in fp32 (kdiff's
  interpreter rounds them as cvt.rna.tf32.f32 does on the CPU too). Relative error about
  5e-4 on uniform[0, 1) inputs: inside KernelBench v0.1's atol = rtol = 1e-2.
imitates: generated Triton matmuls that leave tl.dot's default TF32 on for fp32 problems
  (PyTorch's "TensorFloat-32 (TF32) on Ampere (and later) devices" note describes the same
  precision loss for torch.backends.cuda.matmul.allow_tf32; Triton's tl.dot documents
  input_precision="tf32" as its default for fp32 inputs).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_tf32_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    m_ok = rm[:, None] < M
    n_ok = rn[None, :] < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = rk < K - k0
        a = tl.load(a_ptrs, mask=m_ok & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & n_ok, other=0.0)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
        acc += tl.dot(a, b)  # TF32: the default for fp32 operands
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty((M, N), device=A.device, dtype=A.dtype)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
        matmul_tf32_kernel[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0),
                                 B.stride(1), C.stride(0), C.stride(1),
                                 BLOCK_M=32, BLOCK_N=64, BLOCK_K=32)
        return C
