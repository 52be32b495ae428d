"""
kdiff-redteam: int8 W8A8 GEMM dequantized to fp16 and accumulated in fp16
expected-gates: PRC-01=below_working_precision
defect: The kernel dequantizes each int8 tile with its scales into fp16 "to feed the fp16
  tensor cores" and sums the products in an fp16 accumulator (tl.dot out_dtype=tl.float16),
  where the contract sums the integer products exactly and dequantizes the sum in fp32. On
  the benchmark's inputs (dequantized values of unit size) the result is within bf16's
  rounding of the reference, but fp16 tops out at 65504: a dequantized operand or a partial
  sum past it is Inf, which the contract's exact int32 sum and fp32 scales never produce.
imitates: W8A8 kernels that dequantize to fp16 before the GEMM instead of after it
  (int8 weight-only paths reused for int8 activations; tl.dot(..., out_dtype=tl.float16) in
  generated Triton GEMMs), losing the integer GEMM's exact accumulation (Xiao et al.,
  "SmoothQuant", 2023: the int8 GEMM accumulates in int32 and dequantizes in the epilogue).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def w8a8_fp16_kernel(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, M, N, K,
                     stride_am, stride_ak, stride_bn, stride_bk, stride_sa, stride_sb,
                     stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    sa = tl.load(sa_ptr + rm * stride_sa, mask=rm < M, other=0.0)
    sb = tl.load(sb_ptr + rn * stride_sb, mask=rn < N, other=0.0)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)
    for k0 in range(0, K, BLOCK_K):
        k_ok = rk < K - k0
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :] * stride_ak,
                    mask=(rm < M)[:, None] & k_ok[None, :], other=0)
        b = tl.load(b_ptr + rn[None, :] * stride_bn + (k0 + rk)[:, None] * stride_bk,
                    mask=k_ok[:, None] & (rn < N)[None, :], other=0)
        a16 = (a.to(tl.float32) * sa[:, None]).to(tl.float16)
        b16 = (b.to(tl.float32) * sb[None, :]).to(tl.float16)
        acc += tl.dot(a16, b16, out_dtype=tl.float16)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float32),
             mask=(rm < M)[:, None] & (rn < N)[None, :])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor, scale_a: torch.Tensor,
                scale_b: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[0]
        C = torch.empty((M, N), device=A.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        w8a8_fp16_kernel[grid](A, B, scale_a, scale_b, C, M, N, K, A.stride(0), A.stride(1),
                               B.stride(0), B.stride(1), scale_a.stride(0), scale_b.stride(0),
                               C.stride(0), C.stride(1), BLOCK_M=32, BLOCK_N=32, BLOCK_K=128)
        return C.to(torch.bfloat16)
