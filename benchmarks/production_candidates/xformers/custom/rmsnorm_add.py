"""kdiff-control: xformers _rms_norm_add_forward (x updated in place with x + y: run on a copy)"""

import torch.nn as nn
import xformers_cpu as X


class ModelNew(nn.Module):
    def forward(self, x, y, weight):
        s = x.clone()
        return X.load("rmsnorm_kernels")._rms_norm_add_forward(s, y, weight, 1e-6), s
