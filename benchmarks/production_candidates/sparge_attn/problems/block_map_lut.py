"""SpargeAttn hunt: a block map (batch, heads, query blocks, key blocks; bool) to a look-up
table: per query block, the distances between its consecutive selected key blocks (the first
from block 0), packed at the start of the row and 0 after; and how many are selected (int32)"""

import torch
import torch.nn as nn

B, H, Q, K = 2, 3, 8, 16


class Model(nn.Module):
    def forward(self, block_map):
        k = block_map.shape[-1]
        index = torch.arange(k).expand_as(block_map)
        last = torch.cummax(torch.where(block_map, index, 0), -1).values
        previous = torch.cat([torch.zeros_like(last[..., :1]), last[..., :-1]], -1)
        slot = torch.where(block_map, block_map.int().cumsum(-1) - 1, k)
        lut = torch.zeros(*block_map.shape[:-1], k + 1, dtype=torch.int32)
        lut.scatter_(-1, slot, (index - previous).int())
        return lut[..., :k], block_map.int().sum(-1, dtype=torch.int32)


def get_inputs():
    return [torch.rand(B, H, Q, K) < 0.4]


def get_init_inputs():
    return []
