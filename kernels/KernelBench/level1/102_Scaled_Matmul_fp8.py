import torch
import torch.nn as nn


class Model(nn.Module):
    """An fp8 scaled GEMM: A (M, K) and B (N, K) in float8_e4m3fn with per-tensor fp32 scales,
    dequantized, multiplied with fp32 accumulation, the result stored in bf16:
    C = bf16((A * scale_a) @ (B * scale_b)^T)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor, scale_a: torch.Tensor,
                scale_b: torch.Tensor) -> torch.Tensor:
        out = (A.to(torch.float32) @ B.to(torch.float32).t()) * (scale_a * scale_b)
        return out.to(torch.bfloat16)


M = 32
K = 128
N = 48


def get_inputs():
    # Per-tensor scaling as an fp8 quantizer makes it: amax mapped to the format's maximum.
    a = torch.randn(M, K)
    b = torch.randn(N, K)
    scale_a = a.abs().amax() / 448.0
    scale_b = b.abs().amax() / 448.0
    return [(a / scale_a).to(torch.float8_e4m3fn), (b / scale_b).to(torch.float8_e4m3fn),
            scale_a, scale_b]


def get_init_inputs():
    return []
