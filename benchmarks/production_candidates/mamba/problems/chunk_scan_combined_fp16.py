"""mamba hunt: Mamba-2's SSD forward against its sequential recurrence (dt softplus with bias,
2 heads sharing one group of B and C, D skip, silu(z) gate, an initial state; the final state
returned too); x, B, C, z in fp16 as Mamba-2 runs, the recurrence in fp32"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, dt, A, B, C, D, z, dt_bias, initial_states):
        dtype = x.dtype
        x, B, C, z = x.float(), B.float(), C.float(), z.float()
        batch, seqlen, heads, headdim = x.shape
        B = B.repeat_interleave(heads // B.shape[2], dim=2)
        C = C.repeat_interleave(heads // C.shape[2], dim=2)
        dt = F.softplus(dt + dt_bias)  # (batch, seqlen, heads)
        s = initial_states  # (batch, heads, headdim, dstate)
        ys = []
        for t in range(seqlen):
            decay = torch.exp(dt[:, t] * A)[..., None, None]
            s = s * decay + (dt[:, t, :, None] * x[:, t])[..., None] * B[:, t, :, None, :]
            ys.append((s * C[:, t, :, None, :]).sum(-1) + D[:, None] * x[:, t])
        y = torch.stack(ys, dim=1)
        return (y * F.silu(z)).to(dtype), s


BATCH, SEQLEN, HEADS, HEADDIM, GROUPS, DSTATE = 1, 40, 2, 8, 1, 16


def get_inputs():
    return [
        torch.randn(BATCH, SEQLEN, HEADS, HEADDIM).half(),
        torch.randn(BATCH, SEQLEN, HEADS),
        -(torch.rand(HEADS) * 15 + 1),
        torch.randn(BATCH, SEQLEN, GROUPS, DSTATE).half(),
        torch.randn(BATCH, SEQLEN, GROUPS, DSTATE).half(),
        torch.randn(HEADS),
        torch.randn(BATCH, SEQLEN, HEADS, HEADDIM).half(),
        torch.randn(HEADS) - 4,
        torch.randn(BATCH, HEADS, HEADDIM, DSTATE),
    ]


def get_init_inputs():
    return []
