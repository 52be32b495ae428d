"""kdiff-control: unsloth Fast_RoPE_Embedding_QK (rope_embedding.py: q and k in one launch),
on copies: it rotates a contiguous q and k in place"""

import torch.nn as nn
import unsloth_cpu as U
from rope_qk import cos_sin


class ModelNew(nn.Module):
    def forward(self, q, k):
        cos, sin = cos_sin(q.shape[2], q.shape[3], q.dtype)
        rope = U.load("rope_embedding").Fast_RoPE_Embedding_QK
        return rope.apply(q.clone(), k.clone(), cos, sin, None)
