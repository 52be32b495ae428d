"""kdiff-control: FlagAttention flash attention (causal, with the log normalizer)"""

import flag_attn_cpu as F
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, q, k, v):
        return F.load("flash").attention(q, k, v, causal=True, return_log_normalizer=True)[:2]
