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
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    m_ok = rm[:, None] < N
    n_ok = rn[None, :] < N
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, N, BLOCK_K):
        k_ok = rk < N - k0
        a = tl.load(a_ptrs, mask=m_ok & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & n_ok, other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    # torch.triu on the diagonal tiles.
    acc = tl.where(rm[:, None] <= rn[None, :], acc, 0.0)
    tl.store(c_ptrs, acc, mask=c_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        N = A.shape[0]
        C = torch.empty((N, N), device=A.device, dtype=A.dtype)
        # 2 x 2 output tiles at N = 256 (few programs in the interpreter); K in slabs of 64:
        # the pipelined fp32 A and B slabs take 2 x 128 x 64 x 4 B = 64 KiB per stage, inside
        # sm_90's 227 KiB of shared memory per block (a 128-deep K slab needs 128 KiB per stage:
        # 256 KiB at two stages). Pointers advance by one slab per iteration (fewer
        # interpreted integer ops than recomputing them).
        BLOCK, BLOCK_K = 128, 64
        grid = (triton.cdiv(N, BLOCK), triton.cdiv(N, BLOCK))
        triu_matmul_kernel[grid](A, B, C, N, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                                 C.stride(0), C.stride(1), BLOCK=BLOCK, BLOCK_K=BLOCK_K,
                                 num_warps=8)
        return C
