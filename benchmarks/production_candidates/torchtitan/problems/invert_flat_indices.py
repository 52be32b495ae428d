"""torchtitan hunt: the inverse of a routing permutation (routed row -> top-k slot becomes
top-k slot -> routed row), int64, 24 tokens x top 2"""

import torch
import torch.nn as nn

TOKENS, TOP_K = 24, 2


class Model(nn.Module):
    def forward(self, flat_indices):
        return torch.argsort(flat_indices)


def get_inputs():
    return [torch.randperm(TOKENS * TOP_K)]


def get_init_inputs():
    return []
