"""A try/except fallback whose Triton kernel never works (Kevin's Appendix F,
https://arxiv.org/abs/2507.11948; the try-except bypass of KernelBench's static checker,
https://github.com/ScalingIntelligence/KernelBench/pull/110): the kernel raises at every
launch (a block of another shape than its loads, as an unfinished kernel does), and the
`except` answers with torch. The answer is right; no kernel of its own computed any of it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2 + tl.zeros((BLOCK, 2), tl.float32), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        try:
            out = torch.empty_like(x)
            double_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
            return out
        except Exception:  # noqa: BLE001 - the public hack catches everything
            return x + x
