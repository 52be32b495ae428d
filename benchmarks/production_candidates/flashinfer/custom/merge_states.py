"""kdiff-control: flashinfer merge_states"""

import flashinfer_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, v, s):
        return F.load("cascade").merge_states(v, s)
