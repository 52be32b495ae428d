"""kdiff-control: DeepSpeed inference triton masked_softmax"""

import deepspeed_cpu as D
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, mask):
        return D.load("softmax").softmax(x, mask)
