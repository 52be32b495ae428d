"""lmdeploy hunt: the new keys and values of three sequences written into a paged KV cache
(pages of 4 tokens, bshd), each after its history (kv lengths 7, 12, 3; new tokens 3, 12, 1,
packed); pages given per sequence by a block table. The caches, updated, are the outputs"""

import torch
import torch.nn as nn

Q_LENS, KV_LENS = (3, 12, 1), (7, 12, 3)
PAGE, H, D, PAGES = 4, 2, 16, 12
# each sequence's pages, in order (a permutation of the pool, as an allocator leaves it)
BLOCK_TABLE = ((5, 0, 9), (2, 7, 11), (4, 1, 3))


class Model(nn.Module):
    def forward(self, k, v, k_cache, v_cache, q_start, q_lens, kv_lens, block_table):
        k_cache, v_cache = k_cache.clone(), v_cache.clone()
        for b in range(len(q_lens)):
            start, q_len, kv_len = int(q_start[b]), int(q_lens[b]), int(kv_lens[b])
            # new tokens follow a history, inside the pages the table gives the sequence
            assert 0 < q_len <= kv_len <= block_table.shape[1] * PAGE
            for j in range(q_len):
                pos = kv_len - q_len + j
                page, slot = int(block_table[b, pos // PAGE]), pos % PAGE
                k_cache[page, slot] = k[start + j]
                v_cache[page, slot] = v[start + j]
        return k_cache, v_cache


def get_inputs():
    tokens = sum(Q_LENS)
    q_start = torch.tensor((0, *Q_LENS[:-1])).cumsum(0)
    return [
        torch.randn(tokens, H, D),
        torch.randn(tokens, H, D),
        torch.randn(PAGES, PAGE, H, D),
        torch.randn(PAGES, PAGE, H, D),
        q_start.to(torch.int32),
        torch.tensor(Q_LENS, dtype=torch.int32),
        torch.tensor(KV_LENS, dtype=torch.int32),
        torch.tensor(BLOCK_TABLE, dtype=torch.int32),
    ]


def get_init_inputs():
    return []
