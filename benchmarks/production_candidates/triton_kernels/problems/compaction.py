"""triton_kernels hunt: a router's top-4 (values, expert ids) per token compacted by a
per-token bitmask of experts kept (four int32 words of 128 experts): kept pairs first, in
order, the rest -1; fp32 values, int32 ids, 24 tokens"""

import torch
import torch.nn as nn

TOKENS, K = 24, 4
EXPERTS = 32 * K  # a word of the bitmask for each pick


class Model(nn.Module):
    def forward(self, yv, yi, bitmask):
        bits = 1 << torch.arange(32, dtype=bitmask.dtype)
        active = ((bitmask[..., None] & bits) != 0).flatten(1)
        keep = active.gather(1, yi.long())
        order = (~keep).int().argsort(dim=1, stable=True)
        kept = keep.gather(1, order)
        yv_out = torch.where(kept, yv.gather(1, order), -1.0)
        yi_out = torch.where(kept, yi.gather(1, order), -1)
        return yv_out, yi_out


def get_inputs():
    yi = torch.stack([torch.randperm(EXPERTS)[:K] for _ in range(TOKENS)]).int()
    bitmask = torch.randint(-(2**31), 2**31, (TOKENS, EXPERTS // 32), dtype=torch.int32)
    return [torch.rand(TOKENS, K), yi, bitmask]


def get_init_inputs():
    return []
