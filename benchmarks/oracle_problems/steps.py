"""Roundings to integers, casts to an integer format, comparisons and the masks they make,
differentiated through ReLU's and a mask's kinks: what the oracle's steps and kinks trace."""

import torch

KDIFF_BACKWARD = True


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(24, 24)

    def forward(self, x):
        h = self.linear(x)
        q = torch.round(h * 4).to(torch.int8)
        mask = h > 0.25
        y = torch.where(mask, h, 0.1 * h) + torch.relu(x) * (x > 0)
        return y + q.to(torch.float32) / 4 + torch.floor(h).clamp(-2, 2)


def get_inputs():
    return [torch.round(torch.randn(12, 24) * 8) / 8]


def get_init_inputs():
    return []
