"""
kdiff-control: mean squared error with fp32 block partials (Triton)
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_error_partials(p_ptr, t_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(p_ptr + offs, mask=mask, other=0.0) - tl.load(t_ptr + offs, mask=mask, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(d * d, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        p = predictions.contiguous().view(-1)
        t = targets.contiguous().view(-1)
        n = p.numel()
        blocks = triton.cdiv(n, 4096)
        partials = torch.empty(blocks, device=p.device, dtype=torch.float32)
        squared_error_partials[(blocks,)](p, t, partials, n, BLOCK=4096)
        # The partials are combined in a fixed order: the result is reproducible.
        return (partials.sum() / n).to(predictions.dtype)
