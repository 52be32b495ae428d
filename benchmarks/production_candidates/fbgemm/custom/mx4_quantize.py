"""kdiff-control: FBGEMM triton_quantize_mx4 (E2M1, groups of 32, ceil rounding)"""

import fbgemm_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return F.load("triton.quantize").triton_quantize_mx4(x, group_size=32)
