"""kdiff-control: flash_attn layer_norm_fn with a residual, forward and backward"""

import flash_attn_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, residual, weight, bias):
        return F.load("layer_norm").layer_norm_fn(x, weight, bias, residual=residual, eps=1e-6)
