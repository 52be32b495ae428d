"""kdiff-control: aiter softmax (ops/triton/softmax.py)"""

import aiter_cpu as A
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return A.load("softmax").softmax(x)
