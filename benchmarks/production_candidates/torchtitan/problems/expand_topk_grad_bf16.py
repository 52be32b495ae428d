"""torchtitan hunt: the backward of the top-k combine by its routed rows: each token's bf16
gradient copied to its routed rows, scaled by the routing score (fp32 product, rounded to
bf16), 24 tokens x top 2, 96 columns"""

import torch
import torch.nn as nn

TOKENS, TOP_K, COLS = 24, 2, 96


class Model(nn.Module):
    def forward(self, grad_out, flat_indices, scores):
        rows = grad_out[flat_indices // TOP_K].float() * scores[flat_indices].float()[:, None]
        return rows.to(grad_out.dtype)


def get_inputs():
    return [
        torch.randn(TOKENS, COLS, dtype=torch.bfloat16),
        torch.randperm(TOKENS * TOP_K),
        torch.rand(TOKENS * TOP_K),
    ]


def get_init_inputs():
    return []
