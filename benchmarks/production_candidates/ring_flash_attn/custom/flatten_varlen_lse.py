"""kdiff-control: ring-flash-attention flatten_varlen_lse"""

import ring_flash_attn_cpu as R
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, lse, cu_seqlens):
        return R.triton_utils().flatten_varlen_lse(lse, cu_seqlens)
