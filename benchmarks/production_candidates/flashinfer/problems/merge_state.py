"""flashinfer hunt: merge_state (two partial attention results merged by their base-2 LSEs)"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, v_a, s_a, v_b, s_b):
        s = torch.logaddexp2(s_a, s_b)
        w_a = torch.exp2(s_a - s).unsqueeze(-1)
        w_b = torch.exp2(s_b - s).unsqueeze(-1)
        return v_a * w_a + v_b * w_b, s


T, H, D = 6, 4, 16


def get_inputs():
    return [torch.randn(T, H, D), torch.randn(T, H) * 4, torch.randn(T, H, D), torch.randn(T, H) * 4]


def get_init_inputs():
    return []
