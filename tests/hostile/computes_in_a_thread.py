"""Launches a Triton kernel of its own that copies, and doubles with torch in a thread it
joins before returning: the recorder's operator trace is the calling thread's alone."""

import threading

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        staged = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 64),)](x, staged, x.numel(), BLOCK=64)
        result = []
        worker = threading.Thread(target=lambda: result.append(torch.mul(staged, 2)))
        worker.start()
        worker.join()
        return result[0]
