"""kdiff-control: FlagGems quantile"""

import flaggems_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, q):
        return F.op("quantile").quantile(x, q, 1)
