"""kdiff-control: lmdeploy per_token_quant_int8 (w8a8_triton_kernels)"""

import lmdeploy_cpu as L
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return L.load("w8a8_triton_kernels").per_token_quant_int8(x, 1e-7)
