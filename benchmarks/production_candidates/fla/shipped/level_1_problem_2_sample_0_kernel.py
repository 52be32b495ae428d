"""
kdiff-control: flash-linear-attention's Triton row softmax (fla.ops.utils.softmax.softmax_fwd)
"""
import torch.nn as nn
from fla.ops.utils.softmax import softmax_fwd


class ModelNew(nn.Module):
    def forward(self, x):
        return softmax_fwd(x, dtype=x.dtype)
