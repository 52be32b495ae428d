"""Decisions at near and exact ties (argmax, top-k, max along a dim, sort) and reads at the
picks they make (gather): what the oracle's open picks and alternatives trace."""

import torch


class Model(torch.nn.Module):
    def forward(self, x, w):
        h = x @ w  # computed values: their ties are near ties
        values, index = h.max(dim=-1)
        top, top_index = torch.topk(h, 3, dim=-1)
        ordered, order = torch.sort(x, dim=-1, stable=True)
        picked = torch.gather(h, -1, top_index)
        return values, index, top, picked, ordered, order, torch.argmax(x, dim=0)


def get_inputs():
    # a coarse grid: exact ties in x, near ties in x @ w
    return [torch.round(torch.randn(16, 32) * 2) / 2, torch.round(torch.randn(32, 8) * 2) / 2]


def get_init_inputs():
    return []
