"""kdiff-control: torchtitan reduce_topk_slots_kernel (minimal_async_ep/kernels.py)"""

import torch.nn as nn
import torchtitan_cpu as T


class ModelNew(nn.Module):
    def forward(self, routed_output, slot_to_row, scores):
        kernels = T.load("distributed.minimal_async_ep.kernels")
        return kernels.reduce_topk_slots_kernel(
            routed_output,
            slot_to_row,
            scores,
            num_tokens=scores.shape[0],
            top_k=scores.shape[1],
            scores_are_slot_ordered=True,
        )
