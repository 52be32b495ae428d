"""kdiff-control: ColossalAI rms_layernorm with a residual (the sum written over a copy of x)"""

import colossal_cpu as C
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, residual, weight):
        return C.load("rms_layernorm").rms_layernorm(x.clone(), weight, 1e-5, residual=residual)
