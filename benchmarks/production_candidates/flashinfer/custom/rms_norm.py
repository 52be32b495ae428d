"""kdiff-control: flashinfer rms_norm"""

import flashinfer_cpu as F
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, weight):
        out = torch.empty_like(x)
        F.load("norm").rms_norm(x, weight, out, 1e-6)
        return out
