"""kdiff-control: unsloth act_quant (fp8.py, DeepSeek-V3's blockwise E4M3 activation quantizer
with an all-zero block's scale kept at 1), dequantized with its scales"""

import torch.nn as nn
import unsloth_cpu as U


class ModelNew(nn.Module):
    def forward(self, x):
        y, s = U.load("fp8").act_quant(x, 128)
        return (y.float().reshape(*s.shape, 128) * s[..., None]).reshape(x.shape)
