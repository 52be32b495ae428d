"""kdiff-control: unsloth fast_rope_embedding with position indices (Fast_RoPE_Embedding_QK
reading each row's position; TRL's packed sequences), positions 0..S-1 in each batch row, on
copies: it rotates a contiguous q and k in place"""

import torch
import torch.nn as nn
import unsloth_cpu as U
from rope_qk import cos_sin


class ModelNew(nn.Module):
    def forward(self, q, k):
        cos, sin = cos_sin(q.shape[2], q.shape[3], q.dtype)
        positions = torch.arange(q.shape[2], dtype=torch.int32).repeat(q.shape[0], 1)
        rope = U.load("rope_embedding").fast_rope_embedding
        return rope(q.clone(), k.clone(), cos, sin, positions)
