"""Right at the problem's own precision (fp32), and where its inputs come recast to bf16 (the
problem declares the recast: KDIFF_DTYPES) rounds its operands through fp8 e4m3 in torch: a
kernel below the precision its contract declares wherever it is used in bf16. It also launches
a Triton kernel of its own that computes nothing the answer uses, so that its worker reports
a Triton launch: on the CPU, PRC-01 leaves the bf16 trials of a candidate that ran Triton
kernels to CUDA (the interpreter's bf16 is an emulation), whatever computed its answer."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch(ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(ptr + offsets, tl.load(ptr + offsets))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        _touch[(1,)](torch.zeros(16), BLOCK=16)
        if x.dtype == torch.bfloat16:
            x, gate = (t.to(torch.float8_e4m3fn).to(torch.bfloat16) for t in (x, gate))
        return x * torch.sigmoid(gate)
