"""gemlite hunt: a linear layer of 4-bit weights (uint8 codes, HQQ's format: W = (W_q - zeros) *
scales, groups of 64 along K, applied as gemlite's fma mode does: q * s + bf16(-z * s)),
bf16 activations and metadata, 8 tokens (its split-K GEMM); the dequantized weights
rounded to bf16, the products summed in fp32, one rounding to bf16; K = 256, N = 96"""

import torch
import torch.nn as nn

M, K, N, GROUP = 8, 256, 96, 64


class Model(nn.Module):
    def forward(self, x, w_q, scales, zeros):
        # gemlite's fma mode: -zeros * scales stored at bf16, one fma a weight, rounded once
        shift = (-zeros.float() * scales.float()).to(x.dtype)
        groups = w_q.view(w_q.shape[0], -1, GROUP).float()
        w = (groups * scales.float()[..., None] + shift.float()[..., None]).to(x.dtype)
        w = w.view(w_q.shape)
        return (x.float() @ w.float().t()).to(x.dtype)


def get_inputs():
    return [
        torch.randn(M, K, dtype=torch.bfloat16),
        torch.randint(0, 16, (N, K), dtype=torch.uint8),
        torch.rand(N, K // GROUP, dtype=torch.bfloat16) * 0.02 + 0.005,
        torch.randint(6, 10, (N, K // GROUP)).to(torch.bfloat16),
    ]


def get_init_inputs():
    return []
