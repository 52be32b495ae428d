"""
kdiff-redteam: ReLU as tl.maximum(x, 0) swallows NaN
expected-gates: EXC-01=nan_swallowed
defect: The Triton kernel computes ReLU as tl.maximum(x, 0.0). Triton's maximum follows the
  hardware max instruction (PTX max.f32, and the interpreter mirrors it): when one operand is
  NaN it returns the other, so every NaN input comes out as 0.0 instead of NaN. torch.relu
  propagates NaN. On the benchmark's torch.rand inputs there is no NaN to lose, so allclose
  accepts it.
imitates: the most common generated Triton ReLU (tl.maximum(x, 0.0)); NaN-swallowing max-based
  activations are the first EXC pattern listed in audits of KernelBench submissions and in the
  Triton issue tracker (tl.maximum NaN semantics, propagate_nan defaulting to NONE).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, 4096),)
        relu_kernel[grid](x, out, n, BLOCK_SIZE=4096)
        return out
