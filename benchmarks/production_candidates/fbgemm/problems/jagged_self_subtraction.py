"""FBGEMM hunt: each segment's pairwise differences a[i] - a[j + 1], i, j < N, N one less than
the segment's length cut to MAX_SEQ_LEN + 1, laid out row-major as a jagged result at the
given output offsets (the cumulative sums of N^2; segments of 5, 1, 12, 0, 30; int64)"""

import torch
import torch.nn as nn

LENGTHS, MAX_SEQ_LEN = (5, 1, 12, 0, 30), 16


def pairs(lengths):
    return [max(min(n, MAX_SEQ_LEN + 1) - 1, 0) for n in lengths]


class Model(nn.Module):
    def forward(self, values, offsets, out_offsets):
        rows = []
        for start, n in zip(offsets[:-1].tolist(), pairs(offsets.diff().tolist())):
            segment = values[start:start + n + 1]
            rows.append((segment[:n, None] - segment[None, 1:]).reshape(-1))
        return torch.cat(rows)


def get_inputs():
    offsets = torch.tensor((0, *LENGTHS)).cumsum(0)
    out_offsets = torch.tensor([0] + [n * n for n in pairs(LENGTHS)]).cumsum(0)
    return [torch.randn(sum(LENGTHS)), offsets, out_offsets]


def get_init_inputs():
    return []
