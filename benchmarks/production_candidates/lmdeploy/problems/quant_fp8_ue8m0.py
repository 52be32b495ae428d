"""lmdeploy hunt: DeepSeek-style blocked fp8 quantization of bf16 activations with power-of-two
scales (ue8m0): per row and group of 128, scale = 2^ceil(log2(max(amax, 1e-6) / 448)), the
values divided by it, clamped to E4M3's range and cast; the E4M3 values and the fp32 scales"""

import torch
import torch.nn as nn

M, K, GROUP = 8, 384, 128
FP8_MAX = 448.0


class Model(nn.Module):
    def forward(self, x):
        a = x.float().view(M, K // GROUP, GROUP)
        amax = a.abs().amax(-1).clamp(min=1e-6)
        scale = torch.exp2(torch.ceil(torch.log2(amax * torch.tensor(1 / FP8_MAX))))
        out = (a / scale[..., None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        return out.view(M, K), scale


def get_inputs():
    return [torch.randn(M, K).bfloat16()]


def get_init_inputs():
    return []
