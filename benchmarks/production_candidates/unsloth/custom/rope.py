"""kdiff-control: unsloth fast_rope_embedding without position indices (rope_embedding.py:
Fast_RoPE_Embedding on q and k, each transposed to (batch, seq, heads, dim) and back)"""

import torch.nn as nn
import unsloth_cpu as U
from rope_qk import cos_sin


class ModelNew(nn.Module):
    def forward(self, q, k):
        cos, sin = cos_sin(q.shape[2], q.shape[3], q.dtype)
        return U.load("rope_embedding").fast_rope_embedding(q, k, cos, sin)
