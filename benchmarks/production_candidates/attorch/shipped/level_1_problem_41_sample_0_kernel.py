"""
kdiff-control: attorch's Triton activation kernel (act_func_forward_kernel, 'silu') for x * sigmoid(x)
"""
import torch
import torch.nn as nn

if not torch.cuda.is_available():  # attorch asks the GPU for its capability at import: an sm_90
    torch.cuda.get_device_capability = lambda device=None: (9, 0)

from attorch.act_layers import ActFuncAutoGrad


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        return ActFuncAutoGrad.apply(x, "silu", 0.0, False)
