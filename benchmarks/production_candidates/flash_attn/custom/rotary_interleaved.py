"""kdiff-control: flash_attn apply_rotary (interleaved, seqlen_offsets tensor)"""

import flash_attn_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, cos, sin, offsets):
        return F.load("rotary").apply_rotary(x, cos, sin, seqlen_offsets=offsets, interleaved=True)
