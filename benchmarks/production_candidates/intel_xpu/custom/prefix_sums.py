"""kdiff-control: intel-xpu-backend-for-triton benchmarks' scan_kernel (prefix_sums.py)"""

import intel_xpu_cpu as I
import torch
import torch.nn as nn

AXIS = 0


class ModelNew(nn.Module):
    def forward(self, x):
        # the kernel sums in place over a dense row-major block, as the benchmark launches it;
        # a contiguous copy keeps the input
        out = x.clone(memory_format=torch.contiguous_format)
        scan = I.load("prefix_sums").scan_kernel
        scan[(1,)](out, BLOCK_SIZE_M=out.shape[0], BLOCK_SIZE_N=out.shape[1], AXIS=AXIS)
        return out
