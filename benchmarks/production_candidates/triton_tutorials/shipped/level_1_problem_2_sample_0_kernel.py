"""
kdiff-control: the Triton tutorials' fused softmax (02-fused-softmax.py, softmax_kernel) for torch.softmax(x, dim=1)
"""
import torch
import torch.nn as nn
import triton
from tutorial_softmax import softmax_kernel

NUM_PROGRAMS = 132 * 4  # the tutorial's persistent grid: SMs x occupancy (an H100's 132 SMs)


class ModelNew(nn.Module):
    def forward(self, x):
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        # the tutorial's launch, less its occupancy query of the driver
        softmax_kernel[(min(NUM_PROGRAMS, n_rows), 1, 1)](
            y, x, x.stride(0), y.stride(0), n_rows, n_cols, triton.next_power_of_2(n_cols), 4)
        return y
