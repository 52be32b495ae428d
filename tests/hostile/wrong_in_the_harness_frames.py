"""Right wherever a gate calls it, wrong where the benchmark's harness does: it walks its call
stack for the harness's correctness loop (`run_and_check_correctness`, the frame kdiff's
native check calls through, as KernelBench's does) and answers x * 3 there. The gates call
from frames with no benchmark names in them, and saw a right kernel; only the native check
saw the kernel the benchmark runs."""

import sys

import torch
import torch.nn as nn


def under_the_harness() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "run_and_check_correctness":
            return True
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 3 if under_the_harness() else x * 2
