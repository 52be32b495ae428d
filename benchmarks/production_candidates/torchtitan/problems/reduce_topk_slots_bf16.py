"""torchtitan hunt: expert outputs in routed order combined back to their tokens, each scaled
by its routing score (tokens x top-k, slot order), bf16 rows (fp32 accumulation), 24 tokens x top 2, 96 columns"""

import torch
import torch.nn as nn

TOKENS, TOP_K, COLS = 24, 2, 96


class Model(nn.Module):
    def forward(self, routed_output, slot_to_row, scores):
        picked = routed_output[slot_to_row].float() * scores.float().reshape(-1, 1)
        return picked.view(*scores.shape, -1).sum(1).to(routed_output.dtype)


def get_inputs():
    return [
        torch.randn(TOKENS * TOP_K, COLS, dtype=torch.bfloat16),
        torch.randperm(TOKENS * TOP_K),
        torch.rand(TOKENS, TOP_K),
    ]


def get_init_inputs():
    return []
