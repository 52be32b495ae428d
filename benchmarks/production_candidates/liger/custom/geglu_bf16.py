"""kdiff-control: Liger GEGLU (LigerGELUMulFunction), bf16"""

import torch.nn as nn
from liger_kernel.ops.geglu import LigerGELUMulFunction


class ModelNew(nn.Module):
    def forward(self, a, b):
        return LigerGELUMulFunction.apply(a, b)
