"""kdiff-control: torchtitan invert_flat_indices_kernel (minimal_async_ep/kernels.py)"""

import torch.nn as nn
import torchtitan_cpu as T


class ModelNew(nn.Module):
    def forward(self, flat_indices):
        kernels = T.load("distributed.minimal_async_ep.kernels")
        return kernels.invert_flat_indices_kernel(flat_indices, num_rows=flat_indices.numel())
