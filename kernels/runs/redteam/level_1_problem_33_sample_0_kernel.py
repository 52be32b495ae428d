"""
kdiff-redteam: parameters pinned to the benchmark seed
expected-gates: CMP-02=seed_specialised
defect: The constructor calls torch.manual_seed(42) before creating its parameters "so that the weights match the reference". Under the benchmark, which seeds both models with 42, the parameters are identical; any model built with another seed (or loaded with other weights) still computes with the seed-42 parameters, so the kernel only ever reproduces the benchmark's one initialisation.
imitates: Generated ModelNew classes that re-seed inside __init__ (torch.manual_seed(42)) to reproduce the reference's random weights, a pattern reported in KernelBench and KernelLLM sample outputs; constants specialised to the benchmark seed.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_shift_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n, dim, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    col = offs % dim
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + col, mask=mask)
    b = tl.load(b_ptr + col, mask=mask)
    tl.store(out_ptr + offs, x * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        torch.manual_seed(42)  # match the reference's initialisation
        self.weight = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 4096
        scale_shift_kernel[(triton.cdiv(n, BLOCK),)](
            x, self.weight.contiguous(), self.bias.contiguous(), out, n, x.shape[-1], BLOCK=BLOCK)
        return out
