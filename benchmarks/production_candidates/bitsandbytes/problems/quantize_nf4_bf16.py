"""bitsandbytes hunt: 4-bit blockwise quantization to NF4 (QLoRA's weights): per block of 64
the absmax, x / absmax to the nearest of the 16 codes, two codes a byte (first in the high
nibble); the packed bytes and absmax, as bitsandbytes' default backend computes them"""

import torch
import torch.nn as nn

ROWS, COLS, BLOCK = 16, 128, 64
# bitsandbytes.functional.get_4bit_type("nf4"): sorted
CODE = torch.tensor(
    [
        -1.0,
        -0.6961928009986877,
        -0.5250730514526367,
        -0.39491748809814453,
        -0.28444138169288635,
        -0.18477343022823334,
        -0.09105003625154495,
        0.0,
        0.07958029955625534,
        0.16093020141124725,
        0.24611230194568634,
        0.33791524171829224,
        0.44070982933044434,
        0.5626170039176941,
        0.7229568362236023,
        1.0,
    ]
)


class Model(nn.Module):
    def forward(self, A):
        order = torch.argsort(CODE)
        bounds = (CODE[order[:-1]] + CODE[order[1:]]) / 2
        blocks = A.reshape(-1, BLOCK).float()
        absmax = blocks.abs().max(dim=-1)[0]
        scaled = torch.clamp(blocks * (1.0 / absmax.clamp(min=1e-38).view(-1, 1)), -1, 1)
        q = order[torch.bucketize(scaled.reshape(-1), bounds, out_int32=True)].to(torch.uint8)
        return ((q[::2] << 4) | q[1::2]).unsqueeze(1), absmax


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []


# The problem at bfloat16 (twenty-second session, second pass): the fp32 problem's floating inputs
# cast, so that the reference runs in torch at bfloat16, as production runs the kernel
_fp32_inputs = get_inputs


def get_inputs():
    return [t.to(torch.bfloat16) if t.is_floating_point() else t for t in _fp32_inputs()]
