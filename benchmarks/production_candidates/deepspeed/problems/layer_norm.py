"""deepspeed hunt: LayerNorm, fp16 (fp32 statistics)"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, weight, bias):
        return F.layer_norm(x.float(), (x.shape[-1],), weight.float(), bias.float(), 1e-5).to(
            x.dtype
        )


def get_inputs():
    return [torch.randn(4, 16, 320).half(), (torch.rand(320) + 0.5).half(), torch.randn(320).half()]


def get_init_inputs():
    return []
