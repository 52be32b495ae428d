"""kdiff-control: FlagGems layer_norm"""

import flaggems_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, w, b):
        return F.op("layernorm").layer_norm(x, [x.shape[-1]], w, b)[0]
