"""
kdiff-control: Triton RMSNorm over the feature dimension, two passes per spatial block
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, out_ptr, F, S, eps, BLOCK_S: tl.constexpr):
    b = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    mask = offs < S
    base = b * F * S
    acc = tl.zeros([BLOCK_S], dtype=tl.float32)
    for f in range(0, F):
        x = tl.load(x_ptr + base + f * S + offs, mask=mask, other=0.0)
        acc += x * x
    rms = tl.sqrt(acc / F + eps)
    for f in range(0, F):
        x = tl.load(x_ptr + base + f * S + offs, mask=mask, other=0.0)
        tl.store(out_ptr + base + f * S + offs, x / rms, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        B, F = x.shape[0], x.shape[1]
        S = x[0, 0].numel()
        BLOCK_S = 128
        rms_norm_kernel[(B, triton.cdiv(S, BLOCK_S))](x, out, F, S, self.eps, BLOCK_S=BLOCK_S)
        return out
