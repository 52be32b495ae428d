"""ColossalAI hunt: one decoding step's keys and values (one token a sequence) written into a
blocked KV cache ([blocks, heads, block size 8, head dim]) at each sequence's last position
(context lengths 5, 17, 8, 1, counting the new token); block tables per sequence. The caches,
updated, are the outputs"""

import torch
import torch.nn as nn

LENGTHS = (5, 17, 8, 1)
BLOCKS, H, PAGE, D = 10, 2, 8, 32
BLOCK_TABLES = ((3, 7, 0), (1, 9, 4), (6, 2, 5), (8, 0, 0))


class Model(nn.Module):
    def forward(self, k, v, k_cache, v_cache, lengths, block_tables):
        k_cache, v_cache = k_cache.clone(), v_cache.clone()
        for b, length in enumerate(lengths.tolist()):
            assert 0 < length <= block_tables.shape[1] * PAGE
            pos = length - 1
            block = int(block_tables[b, pos // PAGE])
            k_cache[block, :, pos % PAGE] = k[b]
            v_cache[block, :, pos % PAGE] = v[b]
        return k_cache, v_cache


def get_inputs():
    bsz = len(LENGTHS)
    return [
        torch.randn(bsz, H, D, dtype=torch.float16),
        torch.randn(bsz, H, D, dtype=torch.float16),
        torch.randn(BLOCKS, H, PAGE, D, dtype=torch.float16),
        torch.randn(BLOCKS, H, PAGE, D, dtype=torch.float16),
        torch.tensor(LENGTHS, dtype=torch.int32),
        torch.tensor(BLOCK_TABLES, dtype=torch.int32),
    ]


def get_init_inputs():
    return []
