"""kdiff-control: GPTQModel triton_utils.dequant.dequant (4-bit)"""

import gptqmodel_cpu as G
import torch.nn as nn

BITS = 4


class ModelNew(nn.Module):
    def forward(self, qweight, scales, qzeros, g_idx):
        dequant = G.load("nn_modules.triton_utils.dequant").dequant
        return dequant(scales.dtype, qweight, scales, qzeros, g_idx, BITS, 32, 2**BITS - 1)
