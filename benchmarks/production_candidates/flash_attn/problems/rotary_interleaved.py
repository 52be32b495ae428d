"""flash-attention hunt: rotary embedding of interleaved pairs (GPT-J: x[2i], x[2i+1]), the
whole head dim 16 rotated, positions from a per-sequence offset tensor (decoding with a cache)"""

import torch
import torch.nn as nn

B, S, H, D = 3, 10, 2, 16
MAX_OFFSET = 6


class Model(nn.Module):
    def forward(self, x, cos, sin, offsets):
        # the class flash_attn's launcher serves: head dims up to 256, some of them rotated
        assert x.shape[-1] <= 256 and cos.shape[-1] > 0
        s = x.shape[1]
        positions = offsets[:, None] + torch.arange(s)  # b, s
        c, n = cos[positions][:, :, None, :], sin[positions][:, :, None, :]  # b, s, 1, d/2
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x0 * c - x1 * n, x0 * n + x1 * c), dim=-1).flatten(-2)


def get_inputs():
    n = S + MAX_OFFSET
    angles = torch.outer(
        torch.arange(n, dtype=torch.float32),
        10000.0 ** (-torch.arange(D // 2, dtype=torch.float32) / (D // 2)),
    )
    return [
        torch.randn(B, S, H, D),
        angles.cos(),
        angles.sin(),
        torch.randint(0, MAX_OFFSET + 1, (B,)),
    ]


def get_init_inputs():
    return []
