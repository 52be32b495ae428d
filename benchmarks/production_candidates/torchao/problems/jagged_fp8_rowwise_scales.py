"""torchao hunt: fp8 quantization with "jagged" rowwise scales (MoE training: the columns
split into groups by their end offsets, 40, 64 and 100 here; per row and group the scale
448 / max(amax, 1e-12), computed in float64, then x * scale clamped and cast to E4M3); the E4M3
values and the scales, group by group"""

import torch
import torch.nn as nn

M, K = 16, 100
OFFSETS = (40, 64, 100)
FP8_MAX = 448.0


class Model(nn.Module):
    def forward(self, x, offsets):
        out, scales, start = [], [], 0
        for end in offsets.tolist():
            group = x[:, start:end]
            amax = group.abs().amax(dim=1).double().clamp(min=1e-12)
            scale = (FP8_MAX / amax).float()
            out.append((group * scale[:, None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn))
            scales.append(scale)
            start = end
        return torch.cat(out, dim=1), torch.cat(scales)


def get_inputs():
    return [torch.randn(M, K), torch.tensor(OFFSETS, dtype=torch.int32)]


def get_init_inputs():
    return []
