"""applied-ai hunt: softmax over the last axis of (4, 12, 300), and its VJP"""

import torch
import torch.nn as nn

B, H, N = 4, 12, 300
KDIFF_BACKWARD = True


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(B, H, N)]


def get_init_inputs():
    return []
