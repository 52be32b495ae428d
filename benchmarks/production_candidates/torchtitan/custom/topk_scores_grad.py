"""kdiff-control: torchtitan topk_scores_grad_kernel (minimal_async_ep/kernels.py)"""

import torch
import torch.nn as nn
import torchtitan_cpu as T


class ModelNew(nn.Module):
    def forward(self, routed_output, grad_out, flat_indices):
        kernels = T.load("distributed.minimal_async_ep.kernels")
        return kernels.topk_scores_grad_kernel(
            routed_output,
            grad_out,
            flat_indices,
            top_k=routed_output.shape[0] // grad_out.shape[0],
            dtype=torch.float32,
            scores_are_slot_ordered=True,
        )
