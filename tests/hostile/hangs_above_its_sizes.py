"""A ReLU (problem 19) right at every shape no larger than the benchmark's, that never answers
at a larger one, as a kernel whose loop past its tuned sizes never ends does. It launches a
Triton kernel of its own that computes nothing the answer uses, so that its worker reports a
Triton launch: on the CPU, CMP-03 lets off a timeout at a size larger than the benchmark's for
a candidate that runs Triton kernels (the interpreter can be that slow), and no other gate
calls it above the benchmark's sizes."""

import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

BENCHMARK_ELEMENTS = 16 * 1024  # problem 19's batch_size * dim


@triton.jit
def _touch(ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(ptr + offsets, tl.load(ptr + offsets))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _touch[(1,)](torch.zeros(16), BLOCK=16)
        while x.numel() > BENCHMARK_ELEMENTS:
            time.sleep(1.0)
        return torch.relu(x)
