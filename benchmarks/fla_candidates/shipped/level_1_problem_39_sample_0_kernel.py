"""
kdiff-control: flash-linear-attention's Triton L2 norm (fla.modules.l2norm, eps 1e-6 inside the root)
"""
import torch.nn as nn
from fla.modules.l2norm import l2norm


class ModelNew(nn.Module):
    def forward(self, x):
        return l2norm(x)
