"""lmdeploy hunt: SwiGLU's activation, silu(gate) * up of a fused gate_up projection, fp16
(silu in fp32, rounded to fp16, then the product in fp16)"""

import torch
import torch.nn as nn
import torch.nn.functional as F

M, N = 20, 300


class Model(nn.Module):
    def forward(self, gate_up):
        gate, up = gate_up.chunk(2, dim=-1)
        return F.silu(gate.float()).half() * up


def get_inputs():
    return [torch.randn(M, 2 * N, dtype=torch.float16)]


def get_init_inputs():
    return []
