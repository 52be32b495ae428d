"""kdiff-control: flashinfer silu_and_mul, E4M3 out"""

import flashinfer_cpu as F
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, x_scale, o_scale):
        o = F.load("activation").silu_and_mul(x, x_scale, o_scale, dtype=torch.float8_e4m3fn)
        return o.float()
