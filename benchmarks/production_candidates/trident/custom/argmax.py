"""kdiff-control: Trident argmax"""

import torch.nn as nn
import trident_cpu as T


class ModelNew(nn.Module):
    def forward(self, x):
        return T.function.argmax(x, 1)
