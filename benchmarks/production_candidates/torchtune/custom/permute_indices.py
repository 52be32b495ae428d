"""kdiff-control: torchtune modules.moe.indices.generate_permute_indices"""

import torch.nn as nn
import torchtune_cpu as T

EXPERTS_PER_RANK, NUM_RANKS, ALIGNMENT = 4, 2, 8


class ModelNew(nn.Module):
    def forward(self, tokens_per_expert_group):
        generate = T.load("modules.moe.indices").generate_permute_indices
        return generate(tokens_per_expert_group, EXPERTS_PER_RANK, NUM_RANKS, ALIGNMENT)
