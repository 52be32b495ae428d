"""kdiff-control: intel-xpu-backend-for-triton benchmarks' split-K GEMM (gemm_splitk_benchmark.py)"""

import intel_xpu_cpu as I
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        c = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32, device=a.device)
        return I.load("gemm_splitk_benchmark").matmul(a, b, c)
