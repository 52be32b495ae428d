"""kdiff-control: applied-ai fused_rms_norm_fn (forward and backward kernels)"""

import applied_ai_cpu as A
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, weight):
        return A.load("training/rms_norm/fused_rms_norm").fused_rms_norm_fn(x, weight, eps=1e-6)
