"""kdiff-control: FlagGems argmax_ties"""

import flaggems_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return F.op("argmax").argmax(x, 1)
