"""kdiff-control: aiter rope_fwd_inplace (ops/triton/rope/rope.py), NeoX"""

import aiter_cpu as A
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, freqs):
        rope = A.load("rope.rope")
        return rope.rope_fwd_inplace(
            x,
            freqs,
            rotate_style=rope.RotateStyle.NEOX,
            reuse_freqs_front_part=True,
            nope_first=False,
        )
