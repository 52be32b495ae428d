"""
kdiff-control: Triton RMSNorm over the feature dimension, two passes per spatial block
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, out_ptr, F, S, eps, BLOCK_F: tl.constexpr, BLOCK_S: tl.constexpr):
    b = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    rf = tl.arange(0, BLOCK_F)
    s_ok = offs[None, :] < S
    base = x_ptr + b * F * S
    out_base = out_ptr + b * F * S
    # Pass 1: fp32 sum of squares over the features, BLOCK_F feature rows at a time.
    acc = tl.zeros([BLOCK_S], dtype=tl.float32)
    for f0 in range(0, F, BLOCK_F):
        f = f0 + rf
        mask = (f[:, None] < F) & s_ok
        x = tl.load(base + f[:, None] * S + offs[None, :], mask=mask, other=0.0)
        acc += tl.sum(x * x, axis=0)
    rms = tl.sqrt(acc / F + eps)
    # Pass 2: scale every feature row of the spatial block.
    for f0 in range(0, F, BLOCK_F):
        f = f0 + rf
        mask = (f[:, None] < F) & s_ok
        idx = f[:, None] * S + offs[None, :]
        x = tl.load(base + idx, mask=mask, other=0.0)
        tl.store(out_base + idx, x / rms[None, :], mask=mask)


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
        # [16 features x up to 256 positions] per program and loop step: few programs and few
        # interpreted loop iterations (4 programs, 1 step per pass at the benchmark's sizes).
        BLOCK_F = 16
        BLOCK_S = min(256, max(16, triton.next_power_of_2(S)))
        rms_norm_kernel[(B, triton.cdiv(S, BLOCK_S))](x, out, F, S, self.eps,
                                                       BLOCK_F=BLOCK_F, BLOCK_S=BLOCK_S)
        return out
