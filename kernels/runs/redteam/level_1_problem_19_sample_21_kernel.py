"""
kdiff-redteam: "numerically safe" clamp to the finite fp32 range turns Inf into 3.4e38
expected-gates: EXC-01=inf_swallowed
defect: The Triton ReLU itself is right (it even propagates NaN), but the wrapper clamps the
  result to [-FLT_MAX, FLT_MAX] "so that no Inf reaches the next layer". torch.clamp keeps NaN,
  so only infinities are lost: relu(+Inf) comes back as 3.4028e38 instead of +Inf. The
  benchmark's torch.rand inputs are finite, so allclose accepts it.
imitates: generated kernels that sanitise outputs with clamp(-FLT_MAX, FLT_MAX) or
  torch.nan_to_num "for numerical stability", a pattern flagged in audits of LLM-written
  kernels as hiding overflow from the correctness check.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

FLT_MAX = torch.finfo(torch.float32).max


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(x < 0, 0.0, x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 4096),)](x, out, n, BLOCK_SIZE=4096)
        # Keep the result finite for downstream layers (overflow safety).
        return out.clamp_(-FLT_MAX, FLT_MAX)
