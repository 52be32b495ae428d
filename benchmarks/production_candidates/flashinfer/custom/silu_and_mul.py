"""kdiff-control: flashinfer silu_and_mul"""

import flashinfer_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return F.load("activation").silu_and_mul(x)
