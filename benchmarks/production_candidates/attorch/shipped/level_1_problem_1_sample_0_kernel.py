"""
kdiff-control: attorch's Triton linear layer (LinearAutoGrad, tl.dot) for torch.matmul(A, B)
"""
import torch
import torch.nn as nn

if not torch.cuda.is_available():  # attorch asks the GPU for its capability at import: an sm_90
    torch.cuda.get_device_capability = lambda device=None: (9, 0)

from attorch.linear_layer import LinearAutoGrad


class ModelNew(nn.Module):
    def forward(self, A, B):
        return LinearAutoGrad.apply(A, B)  # input @ weight, weight of shape (in, out)
