"""kdiff-control: mamba_ssm selective_state_update (heads tied over headdim and dstate, as
Mamba2.step calls it: A, dt, dt_bias and D broadcast with stride 0)"""

import mamba_cpu as M
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, state, x, dt, A, B, C, D, z, dt_bias):
        state = state.clone()
        heads, headdim, dstate = state.shape[1:]
        out = M.load("selective_state_update").selective_state_update(
            state,
            x,
            dt[:, :, None].expand(-1, -1, headdim),
            A[:, None, None].expand(heads, headdim, dstate),
            B,
            C,
            D=D[:, None].expand(heads, headdim),
            z=z,
            dt_bias=dt_bias[:, None].expand(heads, headdim),
            dt_softplus=True,
        )
        return out, state
