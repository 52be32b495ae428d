"""kdiff-control: flash_attn cross_entropy_loss (label smoothing, ignore_index)"""

import flash_attn_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, logits, labels):
        return F.load("cross_entropy").cross_entropy_loss(logits, labels, label_smoothing=0.1)[0]
