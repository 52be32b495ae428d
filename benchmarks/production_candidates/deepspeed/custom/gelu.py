"""kdiff-control: DeepSpeed inference triton gelu"""

import deepspeed_cpu as D
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return D.load("gelu").gelu(x)
