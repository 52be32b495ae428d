"""
kdiff-redteam: int4 GEMM built for group size 32 only
expected-gates: CMP-03=shape_specialised
defect: The kernel takes the quantization group size as a compile-time constant fixed at the
  benchmark's 32 (16 bytes) and finds a byte's scale at j // 16, never reading the group
  count the scales' shape gives. Right at the benchmark's group size at every M, N and K;
  at any other group size each byte is scaled by another group's scale, without an error.
imitates: int4 GEMM kernels specialised to one group size (GPTQ/AWQ kernels and Marlin built
  for group 128, llama.cpp's Q4_0 for blocks of 32), generated kernels that hard-code the
  benchmark's shape constants.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def w4_kernel(x_ptr, q_ptr, s_ptr, c_ptr, M, N, K_BYTES,
              stride_xm, stride_xk, stride_qn, stride_qk, stride_sn, stride_sg,
              stride_cm, stride_cn,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_B: tl.constexpr,
              GROUP_BYTES: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rb = tl.arange(0, BLOCK_B)
    m_ok = rm < M
    n_ok = rn < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for b0 in range(0, K_BYTES, BLOCK_B):
        j = b0 + rb  # byte j holds elements 2j (low nibble) and 2j + 1 (high nibble)
        j_ok = j < K_BYTES
        byte = tl.load(q_ptr + rn[None, :] * stride_qn + j[:, None] * stride_qk,
                       mask=j_ok[:, None] & n_ok[None, :], other=0).to(tl.int32)
        # two's complement nibbles: flipping the sign bit and subtracting it sign-extends
        low = ((byte & 0xF) ^ 8) - 8
        high = (((byte >> 4) & 0xF) ^ 8) - 8
        scale = tl.load(s_ptr + rn[None, :] * stride_sn + (j // GROUP_BYTES)[:, None] * stride_sg,
                        mask=j_ok[:, None] & n_ok[None, :], other=0.0).to(tl.float32)
        x_even = tl.load(x_ptr + rm[:, None] * stride_xm + (2 * j)[None, :] * stride_xk,
                         mask=m_ok[:, None] & j_ok[None, :], other=0.0)
        x_odd = tl.load(x_ptr + rm[:, None] * stride_xm + (2 * j + 1)[None, :] * stride_xk,
                        mask=m_ok[:, None] & j_ok[None, :], other=0.0)
        acc += tl.dot(x_even, low.to(tl.float32) * scale, input_precision="ieee")
        acc += tl.dot(x_odd, high.to(tl.float32) * scale, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=m_ok[:, None] & n_ok[None, :])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, qweight: torch.Tensor,
                scales: torch.Tensor) -> torch.Tensor:
        M = x.shape[0]
        N, k_bytes = qweight.shape
        C = torch.empty((M, N), device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
        w4_kernel[grid](x, qweight, scales, C, M, N, k_bytes,
                        x.stride(0), x.stride(1), qweight.stride(0), qweight.stride(1),
                        scales.stride(0), scales.stride(1), C.stride(0), C.stride(1),
                        BLOCK_M=32, BLOCK_N=64, BLOCK_B=64, GROUP_BYTES=16)
        return C
