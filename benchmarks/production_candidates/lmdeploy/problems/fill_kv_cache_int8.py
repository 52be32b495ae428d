"""lmdeploy hunt: the new keys and values of three sequences quantized per token and head to
uint8 (asymmetric: scale (max - min) / 255, zero -min / scale, code x / scale + zero + 0.5
truncated) and written into a paged KV cache with the scale and zero beside them; the caches
and the scales-and-zeros, updated, are the outputs"""

import torch
import torch.nn as nn

Q_LENS, KV_LENS = (3, 12, 1), (7, 12, 3)
PAGE, H, D, PAGES = 4, 2, 16, 12
BLOCK_TABLE = ((5, 0, 9), (2, 7, 11), (4, 1, 3))


def _quant(x):
    lo, hi = x.amin(-1), x.amax(-1)
    scale = (hi - lo) / 255
    zero = -lo / scale
    codes = (x / scale[..., None] + zero[..., None] + 0.5).to(torch.uint8)
    return codes, torch.stack((scale, zero), dim=-1)


class Model(nn.Module):
    def forward(self, k, v, k_cache, v_cache, k_sz, v_sz, q_start, q_lens, kv_lens, block_table):
        caches = [c.clone() for c in (k_cache, v_cache, k_sz, v_sz)]
        (kq, ks), (vq, vs) = _quant(k), _quant(v)
        for b in range(len(q_lens)):
            start, q_len, kv_len = int(q_start[b]), int(q_lens[b]), int(kv_lens[b])
            # new tokens follow a history, inside the pages the table gives the sequence
            assert 0 < q_len <= kv_len <= block_table.shape[1] * PAGE
            for j in range(q_len):
                pos = kv_len - q_len + j
                page, slot = int(block_table[b, pos // PAGE]), pos % PAGE
                for cache, new in zip(caches, (kq, vq, ks, vs)):
                    cache[page, slot] = new[start + j]
        return tuple(caches)


def get_inputs():
    tokens = sum(Q_LENS)
    q_start = torch.tensor((0, *Q_LENS[:-1])).cumsum(0)
    return [
        torch.randn(tokens, H, D),
        torch.randn(tokens, H, D),
        torch.randint(0, 256, (PAGES, PAGE, H, D), dtype=torch.uint8),
        torch.randint(0, 256, (PAGES, PAGE, H, D), dtype=torch.uint8),
        torch.rand(PAGES, PAGE, H, 2),
        torch.rand(PAGES, PAGE, H, 2),
        q_start.to(torch.int32),
        torch.tensor(Q_LENS, dtype=torch.int32),
        torch.tensor(KV_LENS, dtype=torch.int32),
        torch.tensor(BLOCK_TABLE, dtype=torch.int32),
    ]


def get_init_inputs():
    return []
