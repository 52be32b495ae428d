"""FBGEMM hunt: MX4 quantization (E2M1 codes, groups of 32 along the last dim sharing a
power-of-two scale): each group's scale 2^e, e = ceil(log2(max |x|)) - 2 clamped to
[-127, 125] (an all-zero group's max taken as 2^-126), each x / 2^e rounded to the nearest
E2M1 value (0, 0.5, 1, 1.5, 2, 3, 4, 6; halves away from zero; past 6, 6), as a sign bit over a
3-bit index; two codes a byte, the even element in the low nibble; each group's 16 bytes
followed by its exponent byte e + 127 (uint8, [M, K / 2 + K / 32])"""

import torch
import torch.nn as nn

M, K, GROUP = 8, 256, 32


def nearest_e2m1_index(magnitude):
    # below 2 the E2M1 values are 0.5 apart (indices 0-3), then 1 apart (2, 3), then 2 (4, 6)
    step = torch.where(magnitude < 2, 0.5, torch.where(magnitude < 4, 1.0, 2.0))
    value = torch.clamp(torch.floor(magnitude / step + 0.5) * step, max=6)
    return torch.where(value < 2, value * 2, torch.where(value < 4, value + 2, value / 2 + 4))


class Model(nn.Module):
    def forward(self, x):
        assert GROUP == 32  # the class the candidate serves: its call names groups of 32
        groups = x.float().reshape(-1, GROUP)  # bf16 inputs are scaled in fp32, as the kernel does
        peak = groups.abs().amax(1, keepdim=True)
        peak = torch.where(peak == 0, 2.0**-126, peak)
        mantissa, exponent = torch.frexp(peak)  # peak = mantissa 2^exponent, mantissa in [0.5, 1)
        ceil_log2 = torch.where(mantissa == 0.5, exponent - 1, exponent)
        e = torch.clamp(ceil_log2 - 2, -127, 125)
        scaled = groups / torch.pow(2.0, e.to(groups.dtype))
        codes = nearest_e2m1_index(scaled.abs()).to(torch.uint8) | (torch.signbit(scaled).to(torch.uint8) << 3)
        packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
        out = torch.cat([packed, (e + 127).to(torch.uint8)], dim=1)
        return out.reshape(x.shape[0], -1)


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return []
