"""kdiff-control: unsloth swiglu_fg_kernel (swiglu.py, the forward fast_lora's MLP calls)"""

import torch.nn as nn
import unsloth_cpu as U


class ModelNew(nn.Module):
    def forward(self, e, g):
        return U.load("swiglu").swiglu_fg_kernel(e, g)
