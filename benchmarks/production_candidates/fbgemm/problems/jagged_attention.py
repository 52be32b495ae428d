"""FBGEMM hunt: multi-head attention within each segment of jagged [H, sum_B, D] queries, keys
and values, each segment cut to its first MAX_SEQ_LEN rows (rows past the cut zero): O =
softmax(Q K^T) V / MAX_SEQ_LEN (no score scale, no mask; FBGEMM's test reference), and its VJP
by q, k and v (fp32; int64 offsets; segments of 5, 3, 17, 0, 40 rows)"""

import torch
import torch.nn as nn

LENGTHS, HEADS, D, MAX_SEQ_LEN = (5, 3, 17, 0, 40), 2, 16, 32
KDIFF_BACKWARD = ("q", "k", "v")


class Model(nn.Module):
    def forward(self, q, k, v, offsets):
        pieces = []
        for start, end in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
            kept = slice(start, start + min(end - start, MAX_SEQ_LEN))
            p = (q[:, kept] @ k[:, kept].transpose(1, 2)).softmax(-1) / MAX_SEQ_LEN
            pieces.append(p @ v[:, kept])
            pieces.append(q.new_zeros(q.shape[0], end - start - min(end - start, MAX_SEQ_LEN), q.shape[2]))
        return torch.cat(pieces, dim=1)


def get_inputs():
    offsets = torch.tensor((0, *LENGTHS)).cumsum(0)
    total = sum(LENGTHS)
    return [torch.randn(HEADS, total, D), torch.randn(HEADS, total, D), torch.randn(HEADS, total, D), offsets]


def get_init_inputs():
    return []
