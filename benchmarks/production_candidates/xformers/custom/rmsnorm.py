"""kdiff-control: xformers _rms_norm_forward"""

import torch.nn as nn
import xformers_cpu as X


class ModelNew(nn.Module):
    def forward(self, x, weight):
        return X.load("rmsnorm_kernels")._rms_norm_forward(x, weight, 1e-6)
