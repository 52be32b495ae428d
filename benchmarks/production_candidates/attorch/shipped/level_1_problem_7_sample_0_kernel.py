"""
kdiff-control: attorch's Triton squared-error loss (PLossAutoGrad, p=2, mean) for torch.mean((p - t) ** 2)
"""
import torch
import torch.nn as nn

if not torch.cuda.is_available():  # attorch asks the GPU for its capability at import: an sm_90
    torch.cuda.get_device_capability = lambda device=None: (9, 0)

from attorch.p_loss_layers import PLossAutoGrad


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        return PLossAutoGrad.apply(predictions, targets, 2, "mean")
