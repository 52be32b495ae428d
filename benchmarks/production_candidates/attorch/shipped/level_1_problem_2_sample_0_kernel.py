"""
kdiff-control: attorch's Triton softmax (SoftmaxAutoGrad) for torch.softmax(x, dim=1) of a matrix
"""
import torch
import torch.nn as nn

if not torch.cuda.is_available():  # attorch asks the GPU for its capability at import: an sm_90
    torch.cuda.get_device_capability = lambda device=None: (9, 0)

from attorch.softmax_layers import SoftmaxAutoGrad


class ModelNew(nn.Module):
    def forward(self, x):
        return SoftmaxAutoGrad.apply(x, False, False)  # (input, neg, log): softmax of the last dim
