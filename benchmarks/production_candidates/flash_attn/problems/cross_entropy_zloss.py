"""flash-attention hunt: per-row cross entropy of scaled logits (x 0.5) plus the z-loss
1e-4 lse^2 (PaLM), ignore_index -100; the z-loss returned too"""

import torch
import torch.nn as nn

N, V = 16, 300
SCALE, Z = 0.5, 1e-4


class Model(nn.Module):
    def forward(self, logits, labels):
        x = logits * SCALE
        lse = torch.logsumexp(x, dim=-1)
        keep = labels != -100
        picked = x.gather(1, labels.clamp(min=0)[:, None])[:, 0]
        z = torch.where(keep, Z * lse * lse, 0.0)
        return torch.where(keep, lse - picked, 0.0) + z, z


def get_inputs():
    labels = torch.randint(0, V, (N,))
    labels[::5] = -100
    return [torch.randn(N, V), labels]


def get_init_inputs():
    return []
