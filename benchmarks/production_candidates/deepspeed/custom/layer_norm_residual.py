"""kdiff-control: DeepSpeed inference triton layer_norm_residual"""

import deepspeed_cpu as D
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, residual, weight, bias):
        return D.load("layer_norm").layer_norm_residual(x, None, residual, weight, bias, 1e-5)
