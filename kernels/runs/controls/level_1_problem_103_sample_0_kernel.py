"""
kdiff-control: Triton int8 W8A8 GEMM, exact int32 accumulation, scales applied once in fp32
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def w8a8_kernel(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, M, N, K,
                stride_am, stride_ak, stride_bn, stride_bk, stride_sa, stride_sb,
                stride_cm, stride_cn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_ok = rm < M
    n_ok = rn < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = rk < K - k0
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :] * stride_ak,
                    mask=m_ok[:, None] & k_ok[None, :], other=0)
        b = tl.load(b_ptr + rn[None, :] * stride_bn + (k0 + rk)[:, None] * stride_bk,
                    mask=k_ok[:, None] & n_ok[None, :], other=0)
        # int8 x int8 products summed in int32: exact for K < 2^31 / 2^14
        acc += tl.dot(a, b, out_dtype=tl.int32)
    sa = tl.load(sa_ptr + rm * stride_sa, mask=m_ok, other=0.0)
    sb = tl.load(sb_ptr + rn * stride_sb, mask=n_ok, other=0.0)
    out = acc.to(tl.float32) * sa[:, None] * sb[None, :]
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, out,
             mask=m_ok[:, None] & n_ok[None, :])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor, scale_a: torch.Tensor,
                scale_b: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[0]
        # the fp32 epilogue's result, rounded to bf16 once (the interpreter has no bf16 stores)
        C = torch.empty((M, N), device=A.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        w8a8_kernel[grid](A, B, scale_a, scale_b, C, M, N, K, A.stride(0), A.stride(1),
                          B.stride(0), B.stride(1), scale_a.stride(0), scale_b.stride(0),
                          C.stride(0), C.stride(1), BLOCK_M=32, BLOCK_N=32, BLOCK_K=128)
        return C.to(torch.bfloat16)
