"""kdiff-control: flash_attn apply_rotary (not interleaved, partial rotary dim, int offset)"""

import flash_attn_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, cos, sin):
        offset = cos.shape[0] - x.shape[1]
        return F.load("rotary").apply_rotary(x, cos, sin, seqlen_offsets=offset)
