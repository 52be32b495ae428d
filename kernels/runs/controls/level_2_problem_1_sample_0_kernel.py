"""
kdiff-control: fused GEMM + bias + ReLU in one Triton kernel (fp32, IEEE dot)
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_bias_relu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
                          stride_xm, stride_xk, stride_wn, stride_wk,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # W is (N, K) as nn.Linear stores it; read it transposed.
    x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk
    w_ptrs = w_ptr + rk[:, None] * stride_wk + rn[None, :] * stride_wn
    m_ok = rm[:, None] < M
    n_ok = rn[None, :] < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = rk < K - k0
        x = tl.load(x_ptrs, mask=m_ok & k_ok[None, :], other=0.0)
        w = tl.load(w_ptrs, mask=k_ok[:, None] & n_ok, other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    acc = tl.where(acc < 0.0, 0.0, acc)  # NaN stays NaN, as torch.relu keeps it
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias_shape: tuple):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.gemm.weight
        M, K = x.shape
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
        gemm_bias_relu_kernel[grid](x, w, self.bias.contiguous(), y, M, N, K,
                                    x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                                    BLOCK_M=32, BLOCK_N=64, BLOCK_K=32)
        return y
