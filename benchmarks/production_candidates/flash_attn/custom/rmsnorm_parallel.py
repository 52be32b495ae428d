"""kdiff-control: flash_attn rms_norm_fn (x1, weight1, residual, prenorm, zero-centred weight)"""

import flash_attn_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, x1, residual, weight, weight1):
        fn = F.load("layer_norm").rms_norm_fn
        y, y1, s = fn(
            x,
            weight,
            None,
            residual=residual,
            x1=x1,
            weight1=weight1,
            eps=1e-6,
            prenorm=True,
            zero_centered_weight=True,
        )
        return y, y1, s
