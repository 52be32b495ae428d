"""kdiff-control: lightning-thunder triton_crossentropy_impl.cross_entropy (probability targets)"""

import thunder_cpu as T
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, logits, target):
        return T.load().cross_entropy(logits, target)
