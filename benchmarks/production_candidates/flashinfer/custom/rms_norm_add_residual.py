"""kdiff-control: flashinfer rms_norm_add_residual (in place; on copies, the pair returned)"""

import flashinfer_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, residual, weight):
        x, residual = x.clone(), residual.clone()
        F.load("norm").rms_norm_add_residual(x, residual, weight, 1e-6)
        return x, residual
