"""kdiff-control: ktransformers decode_attention_fwd_grouped (pages of 16, 4 KV splits), its
buffers allocated as its caller does"""

import ktransformers_cpu as K
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, q, k_buffer, v_buffer, req_to_token, seqlens):
        batch, heads, dv = q.shape[0], q.shape[1], v_buffer.shape[-1]
        out = torch.empty(batch, heads, dv, dtype=q.dtype, device=q.device)
        logits = torch.empty(batch, heads, 4, dv + 1, dtype=torch.float32, device=q.device)
        K.load("triton_attention").decode_attention_fwd_grouped(
            q, k_buffer, v_buffer, out, req_to_token, seqlens, logits, 4, q.shape[-1] ** -0.5, 16
        )
        return out
