"""kdiff-control: lmdeploy rms_norm with a residual (add_rms_norm_kernel, persistent grid)"""

import lmdeploy_cpu as L
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, residual, weight):
        return L.load("rms_norm").rms_norm(x, weight, eps=1e-6, residual=residual)
