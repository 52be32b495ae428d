"""
kdiff-redteam: matmul tile that fits Hopper but needs 1024 TMEM columns on Blackwell
expected-gates: RES-02=tmem_over_budget, PRC-01=below_working_precision
requires: cpu
defect: One program computes a 128 x next_power_of_2(N) = 128 x 1024 output tile, with a thin
  BLOCK_K = 8 slab (the benchmark's whole reduction) so that the pipelined operands fit
  Hopper's shared memory (110592 B of 232448 B on sm_90). On Blackwell (sm_100) tl.dot becomes a tcgen05 MMA whose fp32
  accumulator lives in tensor memory: 128 lanes x 1024 columns, twice the 512 columns a CTA
  can allocate. Triton compiles the kernel body to a bare `trap` and its launcher raises
  OutOfResources("tensor memory", Required: 1024, Hardware limit: 512), so the kernel cannot
  run on a B200 at all. KernelBench's check on a CPU sees none of this. tl.dot keeps its
  default TF32 input precision, as generated kernels do (the tensor-core product the TMEM
  accumulator belongs to), so the fp32 problem is also computed in TF32: PRC-01, within
  KernelBench v0.1's atol = rtol = 1e-2. CPU only: on the H200 with Triton 3.6 its launch
  raises, so there the benchmark itself rejects it.
imitates: wide output tiles in generated Triton GEMMs that hit "OutOfResources: out of
  resource: tensor memory, Required: 640, Hardware limit: 512" on Blackwell
  (triton-lang/triton#9268; openxla/xla#23551 added a warning for GEMM configs that use
  too much TMEM), the Blackwell counterpart of the common "out of resource: shared memory"
  failure of oversized tiles on Hopper.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty((M, N), device=A.device, dtype=A.dtype)
        # One program per 128-row block covers the whole output row: A is read once.
        BLOCK_M, BLOCK_N, BLOCK_K = 128, triton.next_power_of_2(N), 8
        matmul_kernel[(triton.cdiv(M, BLOCK_M),)](
            A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
            C.stride(0), C.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
        return C
