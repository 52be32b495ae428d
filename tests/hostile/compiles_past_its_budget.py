"""Holds its judge in RES-02's compile phase. Each call doubles its input right, through a
Triton kernel whose UNROLL (a constexpr that only the compiler pays for: the interpreter
runs the unrolled loop in microseconds per step) differs from call to call, so that every
call is a distinct launch, each several seconds to compile per target. The judge compiled
every one of them whatever the case's wall budget (--case-timeout) had left: a worker that
reports a thousand such launches held its judge for hours, and a launch whose compile did
not finish was "not measured", which passes."""

import itertools

import torch
import torch.nn as nn
import triton
import triton.language as tl

CALLS = itertools.count()


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    acc = x
    for _ in tl.static_range(UNROLL):  # a long body for the compiler, no work for the answer
        acc = acc * 0.0 + x
    tl.store(out_ptr + offs, acc * 2, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        double_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256, UNROLL=4000 + next(CALLS))
        return out
