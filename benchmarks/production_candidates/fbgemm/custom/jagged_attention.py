"""kdiff-control: FBGEMM sll multi_head_jagged_flash_attention (Triton forward and backward),
allow_tf32 off"""

import fbgemm_cpu as F
import torch.nn as nn

MAX_SEQ_LEN = 32


class ModelNew(nn.Module):
    def forward(self, q, k, v, offsets):
        module = F.load("sll.triton.triton_multi_head_jagged_flash_attention")
        return module.multi_head_jagged_flash_attention(q, k, v, offsets, MAX_SEQ_LEN, allow_tf32=False)
