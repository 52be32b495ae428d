"""GPTQModel hunt: GPTQ 4-bit weight dequantization with act-order groups (g_idx): W[r, c] =
(q[r, c] - z[g_idx[r], c]) * s[g_idx[r], c], q packed eight rows to an int32 along the input
dim (row r in bits 4 (r mod 8) and up of word r div 8), the zeros eight columns to an int32
(column c in bits 4 (c mod 8) of word c div 8); fp16 scales and result, the product in fp32"""

import torch
import torch.nn as nn

IN_FEATURES, OUT_FEATURES, GROUP = 256, 96, 32
BITS = 4
PER_WORD = 32 // BITS


def unpack(words, dim):
    """The BITS-bit codes of int32 words, PER_WORD of them a word along `dim`, lowest bits first."""
    shifts = torch.arange(PER_WORD) * BITS
    codes = (words.long().unsqueeze(dim + 1) >> shifts.view([-1] + [1] * (words.dim() - dim - 1))) & (2**BITS - 1)
    return codes.flatten(dim, dim + 1)


class Model(nn.Module):
    def forward(self, qweight, scales, qzeros, g_idx):
        q = unpack(qweight, 0)
        z = unpack(qzeros, 1)[g_idx.long()]
        s = scales[g_idx.long()]
        return ((q - z).float() * s.float()).to(scales.dtype)


def get_inputs():
    groups = IN_FEATURES // GROUP
    qweight = torch.randint(-2**31, 2**31, (IN_FEATURES // PER_WORD, OUT_FEATURES), dtype=torch.int32)
    qzeros = torch.randint(-2**31, 2**31, (groups, OUT_FEATURES // PER_WORD), dtype=torch.int32)
    scales = (torch.rand(groups, OUT_FEATURES) * 0.02 + 0.001).half()
    g_idx = (torch.randperm(IN_FEATURES) // GROUP).int()
    return [qweight, scales, qzeros, g_idx]


def get_init_inputs():
    return []
