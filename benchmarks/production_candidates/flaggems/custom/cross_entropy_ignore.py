"""kdiff-control: FlagGems cross_entropy_ignore"""

import flaggems_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, ignore):
        super().__init__()
        self.ignore = ignore

    def forward(self, x, t):
        return F.fused("cross_entropy_loss").cross_entropy_loss(x, t, ignore_index=self.ignore)
