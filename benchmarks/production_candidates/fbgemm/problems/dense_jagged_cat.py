"""FBGEMM hunt: a dense value put before each segment of a 1-D jagged tensor: the jagged
result (each segment cut to its first MAX_SEQ_LEN values, the places of those past them zero)
and its offsets (segments of 5, 3, 17, 0, 30 values; int64)"""

import torch
import torch.nn as nn

LENGTHS, MAX_SEQ_LEN = (5, 3, 17, 0, 30), 20


class Model(nn.Module):
    def forward(self, dense, values, offsets):
        out = torch.zeros(values.numel() + dense.numel(), dtype=values.dtype)
        for i, (start, end) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist())):
            kept = min(end - start, MAX_SEQ_LEN)
            out[start + i] = dense[i]
            out[start + i + 1:start + i + 1 + kept] = values[start:start + kept]
        return out, offsets + torch.arange(offsets.numel())


def get_inputs():
    offsets = torch.tensor((0, *LENGTHS)).cumsum(0)
    return [torch.randn(len(LENGTHS)), torch.randn(sum(LENGTHS)), offsets]


def get_init_inputs():
    return []
