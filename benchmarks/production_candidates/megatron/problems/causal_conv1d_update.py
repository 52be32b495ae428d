"""Megatron-LM hunt: a Mamba decoding step's causal depthwise convolution (width 4, bf16) over
two speculative tokens: each token shifts into the per-channel state, the output is SiLU of the
state times the weights plus the bias; returns the outputs and the state after both"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, TOKENS, DIM, WIDTH = 3, 2, 96, 4


class Model(nn.Module):
    def forward(self, x, conv_state, weight, bias):
        # the class the kernel serves: widths 2 to 4, the state as long as the width
        assert 2 <= weight.shape[-1] <= 4 and conv_state.shape[-1] == weight.shape[-1]
        state, outs = conv_state.float(), []
        for s in range(x.shape[1]):
            state = torch.cat([state[..., 1:], x[:, s, :, None].float()], dim=-1)
            outs.append(F.silu((state * weight.float()).sum(-1) + bias.float()))
        return torch.stack(outs, dim=1).to(x.dtype), state.to(conv_state.dtype)


def get_inputs():
    return [torch.randn(BATCH, TOKENS, DIM).bfloat16(),
            torch.randn(BATCH, DIM, WIDTH).bfloat16(),
            (torch.randn(DIM, WIDTH) / 2).bfloat16(), torch.randn(DIM).bfloat16()]


def get_init_inputs():
    return []
