"""kdiff-control: torchao triton_fp8_per_group_rowwise_scales (E4M3, jagged rowwise scales)"""

import torch.nn as nn
import torchao_cpu as T


class ModelNew(nn.Module):
    def forward(self, x, offsets):
        kernels = T.load("prototype.moe_training.kernels.jagged_float8_scales")
        return kernels.triton_fp8_per_group_rowwise_scales(x, offsets)
