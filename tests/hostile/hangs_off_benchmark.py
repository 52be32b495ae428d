"""Answers at the benchmark's shape only and hangs at every other: a kernel specialised to the
one shape it was tested at, whose grid loop never ends elsewhere. No Triton code, so the
interpreter's slowness excuses none of its timeouts. For tests/fixtures/kernelbench_checkout's
1_Double (x [batch_size 4, dim 16]; tests/test_hangs.py)."""
import torch
import torch.nn as nn

BENCHMARK_SHAPE = (4, 16)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while tuple(x.shape) != BENCHMARK_SHAPE:
            pass
        return x * 2.0
