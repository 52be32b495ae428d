"""aiter hunt: rotary embedding (NeoX halves) written over its bf16 input, sbhd layout,
angles given for half the head and reused for the other (cos and sin taken in fp32, one
rounding to bf16); 20 positions, 2 sequences, 4 heads of 64"""

import torch
import torch.nn as nn

S, B, H, D = 20, 2, 4, 64


class Model(nn.Module):
    def forward(self, x, freqs):
        angles = torch.cat([freqs, freqs], dim=-1).float()
        xf = x.float()
        half = xf.shape[-1] // 2
        rotated = torch.cat([-xf[..., half:], xf[..., :half]], dim=-1)
        x.copy_(xf * angles.cos() + rotated * angles.sin())
        return x


def get_inputs():
    positions = torch.arange(S, dtype=torch.float32)[:, None]
    inv_freq = 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float32) / D)
    freqs = (positions * inv_freq).view(S, 1, 1, D // 2)
    return [torch.randn(S, B, H, D, dtype=torch.bfloat16), freqs]


def get_init_inputs():
    return []
