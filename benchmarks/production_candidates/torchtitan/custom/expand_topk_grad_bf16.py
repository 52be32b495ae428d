"""kdiff-control: torchtitan expand_topk_grad_kernel (minimal_async_ep/kernels.py)"""

import torch.nn as nn
import torchtitan_cpu as T


class ModelNew(nn.Module):
    def forward(self, grad_out, flat_indices, scores):
        kernels = T.load("distributed.minimal_async_ep.kernels")
        return kernels.expand_topk_grad_kernel(
            grad_out,
            flat_indices,
            scores,
            top_k=flat_indices.numel() // grad_out.shape[0],
            dtype=grad_out.dtype,
            scores_are_slot_ordered=True,
        )
