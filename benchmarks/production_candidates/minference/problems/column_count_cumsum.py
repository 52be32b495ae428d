"""MInference hunt: FlexPrefill's block-sparse layout, the running count of active blocks
by row of an R x R block grid: each head's active blocks as flat indices (row * R + column,
distinct), out (batch, heads, R + 1) int32, 0 then the count of blocks in rows up to each"""

import torch
import torch.nn as nn

B, H, R, ACTIVE = 2, 3, 12, 40


class Model(nn.Module):
    def __init__(self, r):
        super().__init__()
        self.r = r

    def forward(self, blocks):
        rows = torch.div(blocks.long(), self.r, rounding_mode="floor")
        counts = torch.zeros(blocks.shape[0], blocks.shape[1], self.r, dtype=torch.long)
        counts.scatter_add_(2, rows, torch.ones_like(rows))
        return torch.nn.functional.pad(counts.cumsum(-1), (1, 0)).to(torch.int32)


def get_inputs():
    blocks = torch.stack([torch.randperm(R * R)[:ACTIVE] for _ in range(B * H)]).sort(-1).values
    return [blocks.reshape(B, H, ACTIVE).to(torch.int32)]


def get_init_inputs():
    return [R]
