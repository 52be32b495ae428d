"""megablocks hunt: expert outputs in expert order scattered back to their tokens, scaled by
the routing weights and summed over each token's top 2 (fp32); 20 tokens, 4 experts, 72
columns"""

import torch
import torch.nn as nn

TOKENS, EXPERTS, TOP_K, COLS = 20, 4, 2, 72


class Model(nn.Module):
    def forward(self, routed, expert_ids, probs):
        indices = torch.sort(expert_ids.flatten(), stable=True).indices
        slots = torch.zeros_like(routed)
        slots[indices] = routed * probs.gather(1, expert_ids).flatten()[indices][:, None]
        return slots.view(*expert_ids.shape, -1).sum(1)


def get_inputs():
    return [
        torch.randn(TOKENS * TOP_K, COLS),
        torch.randint(0, EXPERTS, (TOKENS, TOP_K)),
        torch.rand(TOKENS, EXPERTS),
    ]


def get_init_inputs():
    return []
