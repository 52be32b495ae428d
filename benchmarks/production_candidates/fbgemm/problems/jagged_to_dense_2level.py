"""FBGEMM hunt: a jagged tensor of two ragged levels (outer offsets over the inner segments,
inner offsets over the [sum, D] rows) to a dense [B, MAX_OUTER, MAX_INNER, D] one: inner
segment i of batch b at [b, i, :len], those past MAX_OUTER and rows past MAX_INNER dropped,
the rest PADDING (int64 offsets; the outer ones must end at the inner segments' count)"""

import torch
import torch.nn as nn

OUTER, INNER = (2, 0, 4, 2), (3, 0, 7, 1, 2, 5, 9, 4)  # segments per batch; rows per segment
D, MAX_OUTER, MAX_INNER, PADDING = 20, 3, 6, -1.0


class Model(nn.Module):
    def forward(self, values, outer_offsets, inner_offsets):
        # the class the kernel serves: every inner segment in a batch (it writes the others at
        # the index past the last batch)
        assert outer_offsets[-1] == inner_offsets.numel() - 1
        batches = outer_offsets.numel() - 1
        out = values.new_full((batches, MAX_OUTER, MAX_INNER, values.shape[-1]), PADDING)
        for b in range(batches):
            first, last = outer_offsets[b].item(), outer_offsets[b + 1].item()
            for i, segment in enumerate(range(first, min(last, first + MAX_OUTER))):
                start, end = inner_offsets[segment].item(), inner_offsets[segment + 1].item()
                kept = min(end - start, MAX_INNER)
                out[b, i, :kept] = values[start:start + kept]
        return out


def get_inputs():
    outer = torch.tensor((0, *OUTER)).cumsum(0)
    inner = torch.tensor((0, *INNER)).cumsum(0)
    return [torch.randn(sum(INNER), D), outer, inner]


def get_init_inputs():
    return []
