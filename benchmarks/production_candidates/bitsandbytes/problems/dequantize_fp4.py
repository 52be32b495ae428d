"""bitsandbytes hunt: 4-bit blockwise dequantization from FP4 (QLoRA's weights): two codes a byte (first in
the high nibble), each code's value times its block's absmax (blocks of 64), flat, as
bitsandbytes' default backend computes it"""

import torch
import torch.nn as nn

ROWS, COLS, BLOCK = 16, 128, 64
# bitsandbytes.functional.get_4bit_type("fp4"): sign, 2 exponent bits, 1 mantissa bit, scaled
# by the largest (12) to [-1, 1]; code i is the value of nibble i
CODE = (
    torch.tensor(
        [
            0,
            0.0625,
            8.0,
            12.0,
            4.0,
            6.0,
            2.0,
            3.0,
            -0.0,
            -0.0625,
            -8.0,
            -12.0,
            -4.0,
            -6.0,
            -2.0,
            -3.0,
        ]
    )
    / 12.0
)


class Model(nn.Module):
    def forward(self, packed, absmax):
        packed = packed.reshape(-1)
        codes = torch.empty(packed.numel() * 2, dtype=torch.int64)
        codes[::2] = (packed >> 4).to(torch.int64)
        codes[1::2] = (packed & 0xF).to(torch.int64)
        # the flat values: the shape is the caller's (bitsandbytes keeps it in its QuantState)
        return (CODE[codes].view(-1, BLOCK) * absmax.view(-1, 1)).reshape(-1)


def get_inputs():
    packed = torch.randint(0, 256, (ROWS * COLS // 2, 1), dtype=torch.uint8)
    return [packed, torch.rand(ROWS * COLS // BLOCK) * 4]


def get_init_inputs():
    return []
