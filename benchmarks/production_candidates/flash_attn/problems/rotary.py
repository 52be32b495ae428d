"""flash-attention hunt: rotary embedding, first and second halves (GPT-NeoX), rotary dim 24 of
a head dim 32 (the rest passed through), positions from an offset (the tables' rows past the
sequence's: decoding after a cache)"""

import torch
import torch.nn as nn

B, S, H, D, R, OFFSET = 2, 12, 3, 32, 24, 5


def rotate(x, cos, sin):
    x0, x1 = x[..., : R // 2], x[..., R // 2 : R]
    cos, sin = cos[:, None, :], sin[:, None, :]
    return torch.cat((x0 * cos - x1 * sin, x0 * sin + x1 * cos, x[..., R:]), dim=-1)


class Model(nn.Module):
    def forward(self, x, cos, sin):
        # the class flash_attn's launcher serves: head dims up to 256
        assert x.shape[-1] <= 256
        offset = cos.shape[0] - x.shape[1]
        return rotate(x, cos[offset:], sin[offset:])


def tables(n):
    angles = torch.outer(
        torch.arange(n, dtype=torch.float32),
        10000.0 ** (-torch.arange(R // 2, dtype=torch.float32) / (R // 2)),
    )
    return angles.cos(), angles.sin()


def get_inputs():
    return [torch.randn(B, S, H, D), *tables(S + OFFSET)]


def get_init_inputs():
    return []
