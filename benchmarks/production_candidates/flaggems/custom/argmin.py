"""kdiff-control: FlagGems argmin"""

import flaggems_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return F.op("argmin").argmin(x, 1)
