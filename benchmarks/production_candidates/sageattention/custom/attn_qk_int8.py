"""kdiff-control: SageAttention per_block_int8 then attn_qk_int8_per_block.forward (HND)"""

import sage_cpu as S
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, q, k, v):
        q_int8, q_scale, k_int8, k_scale = S.load("quant_per_block").per_block_int8(q, k)
        out, _ = S.load("attn_qk_int8_per_block").forward(q_int8, k_int8, v, q_scale, k_scale)
        return out
