"""lmdeploy hunt: a paged KV cache (pages of 4 tokens, bshd) read back into packed keys and
values, heads first ([heads, tokens, head dim]): three sequences of 7, 12 and 3 tokens,
their pages given by a block table, each from its start in the packed output"""

import torch
import torch.nn as nn

KV_LENS = (7, 12, 3)
PAGE, H, D, PAGES = 4, 2, 16, 12
BLOCK_TABLE = ((5, 0, 9), (2, 7, 11), (4, 1, 3))


class Model(nn.Module):
    def forward(self, k_cache, v_cache, kv_lens, block_table):
        ks, vs = [], []
        for b, length in enumerate(kv_lens.tolist()):
            assert 0 < length <= block_table.shape[1] * PAGE
            pages = block_table[b, : (length + PAGE - 1) // PAGE].long()
            ks.append(k_cache[pages].flatten(0, 1)[:length])
            vs.append(v_cache[pages].flatten(0, 1)[:length])
        return torch.cat(ks).transpose(0, 1), torch.cat(vs).transpose(0, 1)


def get_inputs():
    return [
        torch.randn(PAGES, PAGE, H, D),
        torch.randn(PAGES, PAGE, H, D),
        torch.tensor(KV_LENS, dtype=torch.int32),
        torch.tensor(BLOCK_TABLE, dtype=torch.int32),
    ]


def get_init_inputs():
    return []
