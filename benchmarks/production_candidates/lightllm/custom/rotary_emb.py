"""kdiff-control: lightllm rotary_emb"""

import lightllm_cpu as L
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, q, k, cos, sin):
        q, k = q.clone(), k.clone()  # lightllm rotates in place
        L.load("llama/triton_kernel/rotary_emb.py").rotary_emb_fwd(q, k, cos, sin)
        return q, k
