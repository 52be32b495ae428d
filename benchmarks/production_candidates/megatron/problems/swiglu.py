"""Megatron-LM hunt: SwiGLU of an MoE's FC1 output (bf16, gate | up along the last dim), every
row live (the permutation map names a token for each, n_used is all of them)"""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS, HIDDEN = 24, 160


class Model(nn.Module):
    def forward(self, x, permutation_map, n_used):
        gate, up = x.float().chunk(2, dim=-1)
        return (F.silu(gate) * up).to(x.dtype)


def get_inputs():
    return [torch.randn(ROWS, 2 * HIDDEN).bfloat16(), torch.arange(ROWS, dtype=torch.int32),
            torch.tensor(ROWS, dtype=torch.int32)]


def get_init_inputs():
    return []
