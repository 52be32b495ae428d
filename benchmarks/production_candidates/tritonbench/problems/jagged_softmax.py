"""tritonbench hunt: softmax over the ragged dimension of a jagged tensor, column by column
(values and int64 offsets; segment lengths 5, 3, 17, 9, 1, 30); the values' shape"""

import torch
import torch.nn as nn

LENGTHS, M = (5, 3, 17, 9, 1, 30), 40


class Model(nn.Module):
    def forward(self, values, offsets):
        segments = zip(offsets[:-1].tolist(), offsets[1:].tolist())
        return torch.cat([values[a:b].softmax(0) for a, b in segments])


def get_inputs():
    offsets = torch.tensor((0, *LENGTHS)).cumsum(0)
    return [torch.randn(sum(LENGTHS), M), offsets]


def get_init_inputs():
    return []
