"""torchtitan hunt: per routed row, the destination rank and row of the dispatch copy, from
per-expert counts, starts and destination offsets (int64; 8 experts, 2 a rank, one empty)"""

import torch
import torch.nn as nn

COUNTS = (3, 0, 5, 2, 7, 1, 4, 2)
LOCAL_EXPERTS = 2


class Model(nn.Module):
    def forward(self, counts, local_dest_offsets, local_count_starts):
        experts = torch.arange(counts.numel()).repeat_interleave(counts)
        offset_in_expert = torch.arange(experts.numel()) - local_count_starts[experts]
        return experts // LOCAL_EXPERTS, local_dest_offsets[experts] + offset_in_expert


def get_inputs():
    counts = torch.tensor(COUNTS)
    starts = counts.cumsum(0) - counts
    return [counts, torch.randint(0, 64, (len(COUNTS),)), starts]


def get_init_inputs():
    return []
