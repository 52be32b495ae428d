"""flash-attention hunt: rotary embedding of packed sequences of lengths 5, 9 and 2 (varlen,
cu_seqlens), each from position 0, inverse rotation (conjugate, as the backward applies it)"""

import torch
import torch.nn as nn

LENGTHS = (5, 9, 2)
H, D = 2, 16


class Model(nn.Module):
    def forward(self, x, cos, sin, cu_seqlens):
        # the class flash_attn's launcher serves: head dims up to 256, some of them rotated
        assert x.shape[-1] <= 256 and cos.shape[-1] > 0
        positions = torch.cat([torch.arange(int(n)) for n in cu_seqlens.diff()])
        c, n = cos[positions][:, None, :], -sin[positions][:, None, :]
        r = cos.shape[-1]  # the rotated half; an odd head dim's last element passes through
        x0, x1 = x[..., :r], x[..., r : 2 * r]
        return torch.cat((x0 * c - x1 * n, x0 * n + x1 * c, x[..., 2 * r :]), dim=-1)


def get_inputs():
    angles = torch.outer(
        torch.arange(max(LENGTHS), dtype=torch.float32),
        10000.0 ** (-torch.arange(D // 2, dtype=torch.float32) / (D // 2)),
    )
    cu = torch.tensor((0, *LENGTHS)).cumsum(0).to(torch.int32)
    return [torch.randn(sum(LENGTHS), H, D), angles.cos(), angles.sin(), cu]


def get_init_inputs():
    return []
