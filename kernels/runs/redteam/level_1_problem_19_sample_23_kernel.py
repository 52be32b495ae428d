"""
kdiff-redteam: flush-to-zero switched on "for speed" (torch.set_flush_denormal)
expected-gates: EXC-02=subnormal_flushed
requires: cpu
defect: The wrapper turns on the CPU's flush-to-zero and denormals-are-zero modes with
  torch.set_flush_denormal(True), because subnormal operands are slow on x86. From then on
  every subnormal input is read as zero and every subnormal result is written as zero, so ReLU
  of a positive subnormal returns 0 instead of the value. It is the CPU twin of compiling a
  CUDA kernel with --use_fast_math (-ftz=true). The benchmark's torch.rand inputs hold no
  subnormal, and a subnormal is far below any allclose tolerance, so the benchmark accepts it.
  (CPU only: set_flush_denormal changes the CPU's modes, not a GPU kernel's.)
imitates: generated kernels that call torch.set_flush_denormal(True) or build with
  --use_fast_math / -ftz=true to win speed (fast-math flush-to-zero is the documented
  behaviour of nvcc --use_fast_math, and a recurring flag in LLM-written CUDA extensions).
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        # Denormals are slow on x86: flush them (FTZ + DAZ) for the whole process.
        torch.set_flush_denormal(True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clamp_min(0.0)
