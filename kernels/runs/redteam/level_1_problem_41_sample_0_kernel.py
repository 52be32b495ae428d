"""
kdiff-redteam: Swish keeping every call's sigmoid workspace in a module-level list
expected-gates: RES-02=memory_leak
defect: The wrapper allocates a workspace for sigmoid(x) on each call, has the Triton kernel
  fill it, and appends it to a module-level list "to reuse later" that nothing ever reads or
  trims. Every call's output is correct, but each call leaves one more input-sized buffer
  alive: 16 KB per call at the benchmark's shape, until a long benchmark or training run
  exhausts device memory. A correctness check of five trials never sees it.
imitates: memory that grows per iteration because tensors are kept in a Python container
  across calls (the PyTorch FAQ, "My model reports 'cuda runtime error(2): out of memory'":
  don't accumulate history across your training loop), in generated wrappers that cache
  workspaces without an eviction policy.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

_workspaces = []  # "reused" workspaces: appended to, never read back or freed


@triton.jit
def swish_kernel(x_ptr, sig_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    e = tl.exp(-tl.abs(x))  # never overflows
    s = tl.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    tl.store(sig_ptr + offs, s, mask=mask)
    tl.store(out_ptr + offs, x * s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        sig = torch.empty_like(x)
        _workspaces.append(sig)
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 4096
        swish_kernel[(triton.cdiv(n, BLOCK),)](x, sig, out, n, BLOCK=BLOCK)
        return out
