"""ColossalAI hunt: one decoding step of attention over a blocked KV cache ([blocks, KV heads,
block size 16, head dim 32]): each sequence's query (4 heads over 2 KV heads) against its first
kv_len cached keys (lengths 5, 37, 16, 1), the pages given by a block table; scores scaled by
1/sqrt(32), computed in fp32 from fp16 inputs, the output rounded to fp16 as [bsz, heads * dim]"""

import torch
import torch.nn as nn

LENGTHS = (5, 37, 16, 1)
BLOCKS, HQ, HK, PAGE, D = 12, 4, 2, 16, 32
BLOCK_TABLES = ((3, 7, 0), (1, 9, 4), (6, 2, 5), (8, 10, 11))


class Model(nn.Module):
    def forward(self, q, k_cache, v_cache, lengths, block_tables):
        out = []
        for b, length in enumerate(lengths.tolist()):
            assert 0 < length <= block_tables.shape[1] * PAGE
            pages = block_tables[b, : (length + PAGE - 1) // PAGE].long()
            k = k_cache[pages].transpose(1, 2).flatten(0, 1)[:length].float()  # [len, HK, D]
            v = v_cache[pages].transpose(1, 2).flatten(0, 1)[:length].float()
            k = k.repeat_interleave(HQ // HK, dim=1)
            v = v.repeat_interleave(HQ // HK, dim=1)
            s = torch.einsum("hd,lhd->hl", q[b].float(), k) / D**0.5
            out.append(torch.einsum("hl,lhd->hd", s.softmax(-1), v).reshape(-1))
        return torch.stack(out).half()


def get_inputs():
    bsz = len(LENGTHS)
    return [
        torch.randn(bsz, HQ, D, dtype=torch.float16),
        torch.randn(BLOCKS, HK, PAGE, D, dtype=torch.float16),
        torch.randn(BLOCKS, HK, PAGE, D, dtype=torch.float16),
        torch.tensor(LENGTHS, dtype=torch.int32),
        torch.tensor(BLOCK_TABLES, dtype=torch.int32),
    ]


def get_init_inputs():
    return []
