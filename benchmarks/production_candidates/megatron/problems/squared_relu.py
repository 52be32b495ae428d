"""Megatron-LM hunt: squared ReLU of an MoE's FC1 output (bf16), every row live"""

import torch
import torch.nn as nn

ROWS, HIDDEN = 24, 160


class Model(nn.Module):
    def forward(self, x, permutation_map, n_used):
        return torch.relu(x.float()).square().to(x.dtype)


def get_inputs():
    return [torch.randn(ROWS, HIDDEN).bfloat16(), torch.arange(ROWS, dtype=torch.int32),
            torch.tensor(ROWS, dtype=torch.int32)]


def get_init_inputs():
    return []
