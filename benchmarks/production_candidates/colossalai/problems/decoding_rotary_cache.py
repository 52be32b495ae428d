"""ColossalAI hunt: one decoding step of attention's inputs: rotary embedding (rotate-half, cos
and sin per token over half the head dim) applied to the queries and the keys, the rotated keys
and the values written into a blocked KV cache ([blocks, heads, block size 8, head dim]) at each
sequence's last position (context lengths 5, 17, 8, 1), 4 query heads over 2 KV heads, fp16.
The rotated queries and the updated caches are the outputs"""

import torch
import torch.nn as nn

LENGTHS = (5, 17, 8, 1)
BLOCKS, HQ, HK, PAGE, D = 10, 4, 2, 8, 32
BLOCK_TABLES = ((3, 7, 0), (1, 9, 4), (6, 2, 5), (8, 0, 0))


def _rotate(x, cos, sin):
    x0, x1 = x[..., : D // 2], x[..., D // 2 :]
    return torch.cat((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)


class Model(nn.Module):
    def forward(self, q, k, v, cos, sin, k_cache, v_cache, lengths, block_tables):
        c, s = cos[:, None, :], sin[:, None, :]
        q, k = _rotate(q, c, s), _rotate(k, c, s)
        k_cache, v_cache = k_cache.clone(), v_cache.clone()
        for b, length in enumerate(lengths.tolist()):
            assert 0 < length <= block_tables.shape[1] * PAGE
            pos = length - 1
            block = int(block_tables[b, pos // PAGE])
            k_cache[block, :, pos % PAGE] = k[b]
            v_cache[block, :, pos % PAGE] = v[b]
        return q, k_cache, v_cache


def get_inputs():
    bsz = len(LENGTHS)
    inv = 10000.0 ** (-torch.arange(D // 2, dtype=torch.float32) / (D // 2))
    angles = torch.outer(torch.tensor(LENGTHS, dtype=torch.float32) - 1, inv)
    return [
        torch.randn(bsz, HQ, D, dtype=torch.float16),
        torch.randn(bsz, HK, D, dtype=torch.float16),
        torch.randn(bsz, HK, D, dtype=torch.float16),
        angles.cos().half(),
        angles.sin().half(),
        torch.randn(BLOCKS, HK, PAGE, D, dtype=torch.float16),
        torch.randn(BLOCKS, HK, PAGE, D, dtype=torch.float16),
        torch.tensor(LENGTHS, dtype=torch.int32),
        torch.tensor(BLOCK_TABLES, dtype=torch.int32),
    ]


def get_init_inputs():
    return []
