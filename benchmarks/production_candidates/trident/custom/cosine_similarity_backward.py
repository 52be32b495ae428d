"""kdiff-control: Trident cosine_similarity_backward"""

import torch.nn as nn
import trident_cpu as T


class ModelNew(nn.Module):
    def forward(self, x1, x2):
        return T.function.cosine_similarity(x1, x2, dim=1)
