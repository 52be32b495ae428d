"""flash-attention hunt: the gradient of the mean of per-row cross entropy with label smoothing
0.1 and ignored rows, by the logits (KDIFF_BACKWARD)"""

import torch
import torch.nn as nn
import torch.nn.functional as F

N, V = 16, 300
KDIFF_BACKWARD = ("logits",)


class Model(nn.Module):
    def forward(self, logits, labels):
        return F.cross_entropy(logits, labels, reduction="none", label_smoothing=0.1)


def get_inputs():
    labels = torch.randint(0, V, (N,))
    labels[::5] = -100
    return [torch.randn(N, V), labels]


def get_init_inputs():
    return []
