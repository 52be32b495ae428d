"""
kdiff-control: Triton upper-triangular matmul; tiles below the diagonal written as zeros
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def triu_matmul_kernel(a_ptr, b_ptr, c_ptr, N,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK + tl.arange(0, BLOCK)
    rn = pid_n * BLOCK + tl.arange(0, BLOCK)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    c_mask = (rm[:, None] < N) & (rn[None, :] < N)
    if pid_m > pid_n:
        # Entirely below the diagonal: the result is zero there, but torch.empty is not.
        tl.store(c_ptrs, tl.zeros((BLOCK, BLOCK), dtype=tl.float32), mask=c_mask)
        return
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, N, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < N) & (kk[None, :] < N), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < N) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    # torch.triu on the diagonal tiles.
    acc = tl.where(rm[:, None] <= rn[None, :], acc, 0.0)
    tl.store(c_ptrs, acc, mask=c_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        N = A.shape[0]
        C = torch.empty((N, N), device=A.device, dtype=A.dtype)
        # 2 x 2 output tiles at N = 256 (few programs in the interpreter); K in slabs of 32 so
        # the pipelined fp32 A and B slabs fit sm_90's 227 KiB of shared memory per block
        # (a 128-deep K slab needs 2 x 128 x 128 x 4 B per stage: 256 KiB at two stages).
        BLOCK, BLOCK_K = 128, 32
        grid = (triton.cdiv(N, BLOCK), triton.cdiv(N, BLOCK))
        triu_matmul_kernel[grid](A, B, C, N, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                                 C.stride(0), C.stride(1), BLOCK=BLOCK, BLOCK_K=BLOCK_K)
        return C
