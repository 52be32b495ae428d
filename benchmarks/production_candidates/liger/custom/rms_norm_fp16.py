"""kdiff-control: Liger RMSNorm (LigerRMSNormFunction, casting mode llama, not in place), fp16"""

import torch.nn as nn
from liger_kernel.ops.rms_norm import LigerRMSNormFunction


class ModelNew(nn.Module):
    def forward(self, x, weight):
        return LigerRMSNormFunction.apply(x, weight, 1e-6, 0.0, "llama", False)
