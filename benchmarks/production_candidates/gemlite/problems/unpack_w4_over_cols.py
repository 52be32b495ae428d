"""gemlite hunt: int32 words unpacked to eight 4-bit codes each (uint8, code j from bits
4j..4j+3), 64 rows of 32 words"""

import torch
import torch.nn as nn

ROWS, WORDS = 64, 32


class Model(nn.Module):
    BITS = 4  # the codes' width: the format's, not a size of the problem

    def forward(self, packed):
        shifts = torch.arange(32 // self.BITS, dtype=torch.int32) * self.BITS
        codes = (packed[..., None] >> shifts) & (2**self.BITS - 1)
        return codes.view(packed.shape[0], -1).to(torch.uint8)


def get_inputs():
    return [torch.randint(-(2**31), 2**31, (ROWS, WORDS), dtype=torch.int32)]


def get_init_inputs():
    return []
