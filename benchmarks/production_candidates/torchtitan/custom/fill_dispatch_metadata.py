"""kdiff-control: torchtitan fill_dispatch_metadata_kernel (minimal_async_ep/kernels.py)"""

import torch.nn as nn
import torchtitan_cpu as T

LOCAL_EXPERTS = 2


class ModelNew(nn.Module):
    def forward(self, counts, local_dest_offsets, local_count_starts):
        kernels = T.load("distributed.minimal_async_ep.kernels")
        return kernels.fill_dispatch_metadata_kernel(
            counts,
            local_dest_offsets,
            local_count_starts,
            num_routed_tokens=int(counts.sum()),
            num_local_experts=LOCAL_EXPERTS,
            max_tokens_per_segment=int(counts.max()),
        )
