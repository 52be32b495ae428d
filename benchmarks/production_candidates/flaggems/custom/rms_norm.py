"""kdiff-control: FlagGems rms_norm"""

import flaggems_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, w):
        return F.op("rms_norm").rms_norm(x, [x.shape[-1]], w, 1e-5)
