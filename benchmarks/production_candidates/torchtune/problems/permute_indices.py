"""torchtune hunt: the MoE permutation of routed tokens grouped by local expert. Per expert e
of a rank, its tokens from every rank in rank order, each given by its index in the received
buffer (rank r's tokens for expert e start after all of the (rank, expert) counts before it),
the expert's span padded with -1 to a multiple of ALIGNMENT (an expert with no token to
ALIGNMENT itself); with the spans' sizes and their running ends (int32; 4 experts a rank, 2
ranks, one expert empty on both)"""

import torch
import torch.nn as nn

EXPERTS_PER_RANK, NUM_RANKS, ALIGNMENT = 4, 2, 8
COUNTS = (5, 0, 9, 1, 3, 0, 16, 2)  # rank 0's experts, then rank 1's


class Model(nn.Module):
    def forward(self, tokens_per_expert_group):
        counts = tokens_per_expert_group.long().view(NUM_RANKS, EXPERTS_PER_RANK)
        starts = (counts.flatten().cumsum(0) - counts.flatten()).view(NUM_RANKS, EXPERTS_PER_RANK)
        spans, sizes = [], []
        for expert in range(EXPERTS_PER_RANK):
            tokens = torch.cat([torch.arange(starts[r, expert], starts[r, expert] + counts[r, expert])
                                for r in range(NUM_RANKS)])
            size = -(-max(tokens.numel(), ALIGNMENT) // ALIGNMENT) * ALIGNMENT
            spans.append(torch.cat([tokens, torch.full((size - tokens.numel(),), -1)]))
            sizes.append(size)
        sizes = torch.tensor(sizes)
        return torch.cat(spans).int(), sizes.int(), sizes.cumsum(0).int()


def get_inputs():
    return [torch.tensor(COUNTS, dtype=torch.int32)]


def get_init_inputs():
    return []
