"""kdiff-control: Trident prelu_backward"""

import torch.nn as nn
import trident_cpu as T


class ModelNew(nn.Module):
    def forward(self, x, weight):
        return T.function.prelu(x, weight)
