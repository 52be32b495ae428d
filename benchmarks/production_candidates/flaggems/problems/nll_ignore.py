"""FlagGems hunt: nll_ignore"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, ignore):
        super().__init__()
        self.ignore = ignore

    def forward(self, x, t):
        return torch.nn.functional.nll_loss(x, t, ignore_index=self.ignore)


B, C = 32, 100
IGNORE = 3


def get_inputs():
    return [torch.randn(B, C).log_softmax(1), torch.randint(0, C, (B,))]


def get_init_inputs():
    return [IGNORE]
