"""kdiff-control: ColossalAI copy_kv_to_blocked_cache (decoding, into copies of the caches)"""

import colossal_cpu as C
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, k, v, k_cache, v_cache, lengths, block_tables):
        k_cache, v_cache = k_cache.clone(), v_cache.clone()
        C.load("kvcache_copy").copy_kv_to_blocked_cache(
            k, v, k_cache, v_cache, lengths, block_tables
        )
        return k_cache, v_cache
