"""kdiff-control: SageAttention per_block_int8 (quant_per_block_int8_kernel, HND)"""

import sage_cpu as S
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, q, k):
        return S.load("quant_per_block").per_block_int8(q, k, BLKQ=128, BLKK=64)
