"""
kdiff-control: attorch's Triton log-softmax (SoftmaxAutoGrad, log) for torch.log_softmax(x, dim=1)
"""
import torch
import torch.nn as nn

if not torch.cuda.is_available():  # attorch asks the GPU for its capability at import: an sm_90
    torch.cuda.get_device_capability = lambda device=None: (9, 0)

from attorch.softmax_layers import SoftmaxAutoGrad


class ModelNew(nn.Module):
    def __init__(self, dim=1):
        super().__init__()

    def forward(self, x):
        return SoftmaxAutoGrad.apply(x, False, True)  # (input, neg, log): of the last dim
