"""kdiff-control: Megatron-LM causal_conv1d_update (Triton), on a copy of the state it updates
in place"""

import megatron_cpu as M
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, conv_state, weight, bias):
        state = conv_state.clone()
        out = M.load("ssm.ops.common.causal_conv1d_triton").causal_conv1d_update(
            x, state, weight, bias, "silu", None)
        return out, state
