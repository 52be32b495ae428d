"""
kdiff-redteam: Triton Swish whose product is inline PTX mul.ftz.f32: subnormals flushed to zero
expected-gates: EXC-02=subnormal_flushed
defect: The kernel computes sigmoid(x) in Triton, then multiplies with
  tl.inline_asm_elementwise("mul.ftz.f32 $0, $1, $2;") "to skip the slow denormal path". The
  .ftz form reads a subnormal operand as zero and writes a subnormal result as zero (PTX ISA,
  "mul": .ftz flushes subnormal inputs and results to sign-preserving zero), so Swish of a
  subnormal x, where the reference returns x / 2, comes back as 0, and so does any product
  below 2^-126. The benchmark's randn inputs hold no subnormal and a subnormal is far below
  its tolerance, so the benchmark accepts it. Compiled for sm_90 without a GPU
  (triton.compile with GPUTarget("cuda", 90, 32), Triton 3.9), the product is FMUL.FTZ in the
  SASS. On the CPU kdiff's interpreter runs this one instruction as the PTX ISA defines it
  (kdiff.sandbox.interpreter_ptx).
imitates: the Triton twin of a CUDA kernel built with --use_fast_math (-ftz=true): generated
  Triton kernels that reach for inline PTX (tl.inline_asm_elementwise) with .ftz or .approx
  instructions for speed.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swish_ftz_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    s = tl.sigmoid(x)
    y = tl.inline_asm_elementwise("mul.ftz.f32 $0, $1, $2;", "=r,r,r", [x, s],
                                  dtype=tl.float32, is_pure=True, pack=1)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        swish_ftz_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
        return y
