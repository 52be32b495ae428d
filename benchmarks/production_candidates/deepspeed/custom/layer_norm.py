"""kdiff-control: DeepSpeed inference triton layer_norm"""

import deepspeed_cpu as D
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, weight, bias):
        return D.load("layer_norm").layer_norm(x, weight, bias, 1e-5)
