"""kdiff-control: flash_attn rms_norm_fn (bf16, residual, prenorm)"""

import flash_attn_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, residual, weight):
        fn = F.load("layer_norm").rms_norm_fn
        return fn(x, weight, None, residual=residual, eps=1e-6, prenorm=True)
