"""kdiff-control: flash_attn layer_norm_fn (residual, prenorm, the sum in the residual dtype)"""

import flash_attn_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, residual, weight, bias):
        fn = F.load("layer_norm").layer_norm_fn
        return fn(x, weight, bias, residual=residual, eps=1e-6, prenorm=True)
