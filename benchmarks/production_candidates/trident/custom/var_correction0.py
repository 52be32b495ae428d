"""kdiff-control: Trident var_correction0"""

import torch.nn as nn
import trident_cpu as T


class ModelNew(nn.Module):
    def forward(self, x):
        return T.function.var(x, 1, correction=0)
