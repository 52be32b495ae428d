"""FBGEMM hunt: a jagged [sum_B, D] tensor's segments, each cut to its first MAX_SEQ_LEN rows,
times that batch's dense [D, T] matrix, rows past the cut zero ([sum_B, T]; int64 offsets,
segments of 5, 3, 17, 0, 30 rows), and its VJP by both (the dense one a jagged^T x jagged
product over each segment's kept rows)"""

import torch
import torch.nn as nn

LENGTHS, D, T, MAX_SEQ_LEN = (5, 3, 17, 0, 30), 24, 40, 20
KDIFF_BACKWARD = ("values", "dense")


class Model(nn.Module):
    def forward(self, values, dense, offsets):
        rows = []
        for i, (start, end) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist())):
            kept = min(end - start, MAX_SEQ_LEN)
            rows.append(values[start:start + kept] @ dense[i])
            rows.append(values.new_zeros(end - start - kept, dense.shape[-1]))
        return torch.cat(rows)


def get_inputs():
    offsets = torch.tensor((0, *LENGTHS)).cumsum(0)
    return [torch.randn(sum(LENGTHS), D), torch.randn(len(LENGTHS), D, T), offsets]


def get_init_inputs():
    return []
