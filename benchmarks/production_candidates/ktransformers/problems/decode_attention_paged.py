"""ktransformers hunt: one decoding step of grouped-query attention over a paged KV cache
(`decode_attention_fwd_grouped`, from SGLang): q (batch, heads, dim) fp16, k and v buffers
(pages x PAGE tokens, kv heads, dim) fp16, each request's pages listed in req_to_token and
its length in seqlens; the query heads of a group share a kv head; scale 1 / sqrt(dim). As the
kernel (and FlashAttention's) computes it: the probabilities exp(s - max) rounded to fp16 for
P @ V, their sum in fp32"""

import torch
import torch.nn as nn

HEADS, KV_HEADS, D = 8, 2, 64
PAGE, PAGES = 16, 12
SEQLENS = (37, 64, 1)
KDIFF_ACCUMULATION = "float32"  # decoding in fp16/bf16; scores and sums in fp32


class Model(nn.Module):
    def forward(self, q, k_buffer, v_buffer, req_to_token, seqlens):
        # the class the launcher serves: pages of 16 tokens (the candidate's page size)
        assert k_buffer.shape[0] % 16 == 0
        out = torch.empty(q.shape[0], q.shape[1], v_buffer.shape[-1], dtype=q.dtype)
        group = q.shape[1] // k_buffer.shape[1]
        for b, n in enumerate(seqlens.tolist()):
            pos = torch.arange(n)
            loc = req_to_token[b, pos // 16].long() * 16 + pos % 16
            keys = k_buffer[loc].float().repeat_interleave(group, 1).transpose(0, 1)
            values = v_buffer[loc].float().repeat_interleave(group, 1).transpose(0, 1)
            scores = (keys @ q[b].float()[:, :, None])[..., 0] * q.shape[-1] ** -0.5
            p = torch.exp(scores - scores.amax(-1, keepdim=True))
            out[b] = ((p.half().float()[:, None, :] @ values)[:, 0] / p.sum(-1, keepdim=True)).to(q.dtype)
        return out


def get_inputs():
    pages = torch.randperm(PAGES)
    req_to_token = torch.zeros(len(SEQLENS), PAGES, dtype=torch.int32)
    first = 0
    for b, n in enumerate(SEQLENS):
        count = -(-n // PAGE)
        req_to_token[b, :count] = pages[first : first + count]
        first += count
    q = torch.randn(len(SEQLENS), HEADS, D).half()
    k_buffer = torch.randn(PAGES * PAGE, KV_HEADS, D).half()
    v_buffer = torch.randn(PAGES * PAGE, KV_HEADS, D).half()
    return [q, k_buffer, v_buffer, req_to_token, torch.tensor(SEQLENS, dtype=torch.int32)]


def get_init_inputs():
    return []
