"""lightning-thunder hunt: cross entropy against class probabilities (each target row a
distribution), mean over the rows, and its VJP by the logits (fp32, 1000 classes)"""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS, CLASSES = 16, 1000
KDIFF_BACKWARD = ("logits",)


class Model(nn.Module):
    def forward(self, logits, target):
        return F.cross_entropy(logits, target)


def get_inputs():
    return [torch.randn(ROWS, CLASSES), torch.randn(ROWS, CLASSES).softmax(-1)]


def get_init_inputs():
    return []
