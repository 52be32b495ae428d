"""deepspeed hunt: GPT-style residual: hidden + attn_out + (residual + final_bias) / mp + attn_bias / mp, mp 2, fp16"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, hidden, residual, attn, attn_bias, final_bias):
        return (
            hidden.float()
            + attn.float()
            + (residual.float() + final_bias.float()) / 2
            + attn_bias.float() / 2
        ).to(hidden.dtype)


def get_inputs():
    return [
        torch.randn(2, 16, 192).half(),
        torch.randn(2, 16, 192).half(),
        torch.randn(2, 16, 192).half(),
        torch.randn(192).half(),
        torch.randn(192).half(),
    ]


def get_init_inputs():
    return []
