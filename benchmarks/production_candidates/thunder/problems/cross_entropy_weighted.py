"""lightning-thunder hunt: cross entropy with class weights, weighted mean over the rows
(sum of w[t] * -log softmax(x)[t] over sum of w[t]), class-index targets, and its VJP by the
logits (fp32, 1000 classes)"""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS, CLASSES = 16, 1000
KDIFF_BACKWARD = ("logits",)


class Model(nn.Module):
    def forward(self, logits, target, weight):
        return F.cross_entropy(logits, target, weight=weight)


def get_inputs():
    return [torch.randn(ROWS, CLASSES), torch.randint(0, CLASSES, (ROWS,)), torch.rand(CLASSES) + 0.5]


def get_init_inputs():
    return []
