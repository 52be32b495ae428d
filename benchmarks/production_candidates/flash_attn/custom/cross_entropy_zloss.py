"""kdiff-control: flash_attn cross_entropy_loss (logit_scale, lse_square_scale, ignore_index)"""

import flash_attn_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, logits, labels):
        ce = F.load("cross_entropy").cross_entropy_loss
        return ce(logits, labels, logit_scale=0.5, lse_square_scale=1e-4)
