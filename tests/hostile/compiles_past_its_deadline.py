"""A 128 x 1024 matmul tile (1024 tensor-memory columns on sm_100, twice what a CTA can
allocate) made slow to compile: a branch no call takes (`K < 0`, a runtime value, so the
compiler builds it and the interpreter skips it) holds UNROLL unrolled steps. RES-02 compiles
each launch under a per-kernel deadline (COMPILE_TIMEOUT_S, 300 s), and a compile past it
left the launch "not measured", which passed. The sm_100 compile took 1.9 s at UNROLL 64,
11.9 s at 2000 and 397.6 s at 8000 on this machine (2 busy
cores). The file ships with the small UNROLL, which fails `tmem_over_budget` in seconds."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

UNROLL = 64  # 8000: past the deadline


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, UNROLL: tl.constexpr,
):  # fmt: skip
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(
            a_ptr + rm[:, None] * K + kk[None, :],
            mask=(rm[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + kk[:, None] * N + rn[None, :],
            mask=(kk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b)
    if K < 0:  # never taken: work for the compiler alone
        for _ in tl.static_range(UNROLL):
            acc = acc * 0.5 + 1.0
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A, B = A.contiguous(), B.contiguous()
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty((M, N), device=A.device, dtype=A.dtype)
        BLOCK_N = triton.next_power_of_2(N)
        matmul_kernel[(triton.cdiv(M, 128),)](
            A, B, C, M, N, K, BLOCK_M=128, BLOCK_N=BLOCK_N, BLOCK_K=8, UNROLL=UNROLL
        )
        return C
