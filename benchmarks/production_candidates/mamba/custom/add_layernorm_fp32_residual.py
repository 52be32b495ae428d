"""kdiff-control: mamba_ssm layer_norm layer_norm_fn (residual, prenorm, residual_in_fp32)"""

import mamba_cpu as M
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, residual, weight, bias):
        fn = M.load("layer_norm").layer_norm_fn
        return fn(x, weight, bias, residual=residual, eps=1e-5, prenorm=True, residual_in_fp32=True)
