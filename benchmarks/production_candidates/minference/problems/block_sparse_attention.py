"""MInference hunt: block-sparse causal attention (`_triton_block_sparse_attention`), fp16
q, k, v (batch, heads, n, dim): each block of 64 queries attends, causally, to the blocks of
64 keys its row of `block_index` lists (ascending, the diagonal block last; the row of block m
reads its first min(m + 1, MAX_BLOCKS) entries); scale 1 / sqrt(dim). As the kernel (and
FlashAttention's) computes it: the probabilities exp(s - max) rounded to fp16 for P @ V, their
sum in fp32"""

import torch
import torch.nn as nn

B, H, N, D = 1, 2, 256, 32
BLOCK, MAX_BLOCKS = 64, 2
KDIFF_ACCUMULATION = "float32"  # MInference serves fp16/bf16; scores and sums in fp32


class Model(nn.Module):
    def forward(self, q, k, v, seqlens, block_index):
        n, rows = q.shape[2], block_index.shape[2]
        # the class the launcher serves: blocks of 64, n in whole blocks (the public wrapper
        # pads to them; the kernel reads q unmasked), a head dim of 16 to 128 (asserted)
        assert n == 64 * rows and q.shape[-1] in (16, 32, 64, 128)
        allowed = torch.zeros(q.shape[0], q.shape[1], rows, rows, dtype=torch.bool)
        for m in range(rows):
            allowed[:, :, m].scatter_(-1, block_index[:, :, m, : min(m + 1, block_index.shape[-1])].long(), True)
        block = torch.arange(n) // 64
        mask = allowed[:, :, block][..., block] & (torch.arange(n)[None, :] <= torch.arange(n)[:, None])
        scores = (q.float() @ k.float().transpose(-1, -2)) * q.shape[-1] ** -0.5
        # masked as SDPA's math masks a boolean mask, by adding -inf (NaN + -inf is NaN)
        scores = scores + torch.zeros_like(scores).masked_fill(~mask, -torch.inf)
        p = torch.exp(scores - scores.amax(-1, keepdim=True))
        out = (p.half().float() @ v.float()) / p.sum(-1, keepdim=True)
        return out.to(q.dtype)


def get_inputs():
    rows = N // BLOCK
    index = torch.zeros(B, H, rows, MAX_BLOCKS, dtype=torch.int32)
    for b in range(B):
        for h in range(H):
            for m in range(rows):
                earlier = torch.randperm(m)[: min(m + 1, MAX_BLOCKS) - 1].sort().values
                index[b, h, m, : len(earlier) + 1] = torch.cat([earlier, torch.tensor([m])])
    q, k, v = (torch.randn(B, H, N, D).half() for _ in range(3))
    return [q, k, v, torch.full((B,), N, dtype=torch.int32), index]


def get_init_inputs():
    return []
