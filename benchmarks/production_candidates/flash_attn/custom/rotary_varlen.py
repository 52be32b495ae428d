"""kdiff-control: flash_attn apply_rotary (varlen cu_seqlens, conjugate)"""

import flash_attn_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, cos, sin, cu_seqlens):
        return F.load("rotary").apply_rotary(
            x,
            cos,
            sin,
            cu_seqlens=cu_seqlens,
            max_seqlen=int(cu_seqlens.diff().max()),
            conjugate=True,
        )
