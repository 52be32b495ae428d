"""megablocks hunt: tokens gathered into per-expert bins of a fixed capacity (0.6 of an even
share, 6 rows; tokens past an expert's capacity dropped, empty rows zero), scaled by their
routing weights (the router's probability of that expert), fp32; 20 tokens, 4 experts, top 2,
72 columns"""

import torch
import torch.nn as nn

TOKENS, EXPERTS, TOP_K, COLS = 20, 4, 2, 72
CAPACITY_FACTOR = 0.6  # megablocks' moe_capacity_factor


class Model(nn.Module):
    def forward(self, x, expert_ids, probs):
        flat = expert_ids.flatten()
        capacity = int(CAPACITY_FACTOR * flat.numel() / probs.shape[1])
        bin_ids, indices = torch.sort(flat, stable=True)
        starts = torch.bincount(flat, minlength=EXPERTS).cumsum(0) - torch.bincount(
            flat, minlength=EXPERTS
        )
        rank_in_bin = torch.arange(flat.numel()) - starts[bin_ids]
        keep = rank_in_bin < capacity
        out = torch.zeros(probs.shape[1], capacity, x.shape[1])
        rows = x[indices // TOP_K] * probs.gather(1, expert_ids).flatten()[indices][:, None]
        out[bin_ids[keep], rank_in_bin[keep]] = rows[keep]
        return out


def get_inputs():
    return [
        torch.randn(TOKENS, COLS),
        torch.randint(0, EXPERTS, (TOKENS, TOP_K)),
        torch.rand(TOKENS, EXPERTS),
    ]


def get_init_inputs():
    return []
