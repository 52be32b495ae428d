"""MInference hunt: vertical-slash sparse causal attention (`_triton_mixed_sparse_attention`),
fp16 q, k, v (batch, heads, n, dim): each block of 64 queries attends, causally, to the
64-key blocks starting at its first block_count offsets of block_offset (the slash lines'
blocks, its diagonal among them), and to its first column_count keys of column_index (the
vertical lines: keys before the block, outside those blocks); scale 1 / sqrt(dim). As the
kernel (and FlashAttention's) computes it: the probabilities exp(s - max) rounded to fp16 for
P @ V, their sum in fp32"""

import torch
import torch.nn as nn

B, H, N, D = 1, 2, 256, 32
BLOCK, NNZ_S, NNZ_V = 64, 2, 16
KDIFF_ACCUMULATION = "float32"  # MInference serves fp16/bf16; scores and sums in fp32


class Model(nn.Module):
    def forward(self, q, k, v, seqlens, block_count, block_offset, column_count, column_index):
        n, rows = q.shape[2], block_count.shape[2]
        # the class the launcher serves: blocks of 64, n in whole blocks (the public wrapper
        # pads to them; the kernel reads q unmasked), a head dim of 16 to 128 (asserted)
        assert n == 64 * rows and q.shape[-1] in (16, 32, 64, 128)
        mask = torch.zeros(q.shape[0], q.shape[1], n, n, dtype=torch.bool)
        causal = torch.arange(n)[None, :] <= torch.arange(n)[:, None]
        for b in range(q.shape[0]):
            for h in range(q.shape[1]):
                for m in range(rows):
                    queries = slice(m * 64, (m + 1) * 64)
                    for start in block_offset[b, h, m, : block_count[b, h, m]].tolist():
                        mask[b, h, queries, start : start + 64] = causal[queries, start : start + 64]
                    mask[b, h, queries, column_index[b, h, m, : column_count[b, h, m]].long()] = True
        scores = (q.float() @ k.float().transpose(-1, -2)) * q.shape[-1] ** -0.5
        # masked as SDPA's math masks a boolean mask, by adding -inf (NaN + -inf is NaN)
        scores = scores + torch.zeros_like(scores).masked_fill(~mask, -torch.inf)
        p = torch.exp(scores - scores.amax(-1, keepdim=True))
        out = (p.half().float() @ v.float()) / p.sum(-1, keepdim=True)
        return out.to(q.dtype)


def get_inputs():
    rows = N // BLOCK
    block_count = torch.zeros(B, H, rows, dtype=torch.int32)
    block_offset = torch.zeros(B, H, rows, NNZ_S, dtype=torch.int32)
    column_count = torch.zeros(B, H, rows, dtype=torch.int32)
    column_index = torch.zeros(B, H, rows, NNZ_V, dtype=torch.int32)
    generator = torch.Generator().manual_seed(0)
    for b in range(B):
        for h in range(H):
            for m in range(rows):
                earlier = torch.randperm(m, generator=generator)[: NNZ_S - 1].sort().values.tolist()
                blocks = earlier + [m]
                block_count[b, h, m] = len(blocks)
                block_offset[b, h, m, : len(blocks)] = torch.tensor(blocks) * BLOCK
                free = torch.tensor([j for j in range(m * BLOCK) if j // BLOCK not in blocks], dtype=torch.int64)
                picked = free[torch.randperm(len(free), generator=generator)[:NNZ_V]].sort().values
                column_count[b, h, m] = len(picked)
                column_index[b, h, m, : len(picked)] = picked
    q, k, v = (torch.randn(B, H, N, D).half() for _ in range(3))
    seqlens = torch.full((B,), N, dtype=torch.int32)
    return [q, k, v, seqlens, block_count, block_offset, column_count, column_index]


def get_init_inputs():
    return []
