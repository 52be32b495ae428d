"""kdiff-control: Trident instance_norm_backward"""

import torch.nn as nn
import trident_cpu as T


class ModelNew(nn.Module):
    def forward(self, x, weight, bias):
        return T.function.instance_norm(x, weight=weight, bias=bias, eps=1e-5)
