"""kdiff-control: applied-ai fused_softmax (forward and backward kernels)"""

import applied_ai_cpu as A
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return A.load("training/fused_softmax/softmax").fused_softmax(x)
