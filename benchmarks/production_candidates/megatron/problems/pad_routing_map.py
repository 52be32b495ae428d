"""Megatron-LM hunt: an MoE routing map (tokens, experts) padded so that each expert's token
count is a multiple of PAD: each expert's first zeros, in token order, set to 1 (int32)"""

import torch
import torch.nn as nn

TOKENS, EXPERTS, PAD = 50, 6, 8


class Model(nn.Module):
    def forward(self, routing_map):
        routed = routing_map.int()
        to_pad = (-routed.sum(0)) % PAD
        free = routed == 0
        return torch.where(free & (free.int().cumsum(0) <= to_pad), 1, routed)


def get_inputs():
    return [torch.rand(TOKENS, EXPERTS) < 0.3]


def get_init_inputs():
    return []
