"""kdiff-control: DeepSpeed inference triton softmax"""

import deepspeed_cpu as D
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return D.load("softmax").softmax(x)
