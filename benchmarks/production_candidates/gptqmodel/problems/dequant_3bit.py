"""GPTQModel hunt: GPTQ 3-bit weight dequantization (groups in order): W[r, c] =
(q[r, c] - z[r div GROUP, c]) * s[r div GROUP, c], 3-bit codes packed 32 to three int32 words
as one 96-bit little-endian stream (code i in bits 3i to 3i + 2, crossing words at codes 10 and
21), q along the input dim (32 rows to three words), the zeros along the output dim; fp16
scales and result, the product in fp32"""

import torch
import torch.nn as nn

IN_FEATURES, OUT_FEATURES, GROUP = 128, 64, 32


def unpack3(words, dim):
    """The 3-bit codes of int32 words, 32 codes to each three words along `dim`."""
    words = words.movedim(dim, -1).long() & 0xFFFFFFFF
    triples = words.unflatten(-1, (-1, 3))
    bit = torch.arange(96).view(32, 3)  # bit k of code i is stream bit 3i + k
    bits = (triples[..., bit // 32] >> (bit % 32)) & 1
    codes = (bits << torch.arange(3)).sum(-1)
    return codes.flatten(-2).movedim(-1, dim)


class Model(nn.Module):
    def forward(self, qweight, scales, qzeros, g_idx):
        q = unpack3(qweight, 0)
        z = unpack3(qzeros, 1)[g_idx.long()]
        s = scales[g_idx.long()]
        return ((q - z).float() * s.float()).to(scales.dtype)


def get_inputs():
    groups = IN_FEATURES // GROUP
    qweight = torch.randint(-2**31, 2**31, (IN_FEATURES // 32 * 3, OUT_FEATURES), dtype=torch.int32)
    qzeros = torch.randint(-2**31, 2**31, (groups, OUT_FEATURES // 32 * 3), dtype=torch.int32)
    scales = (torch.rand(groups, OUT_FEATURES) * 0.02 + 0.001).half()
    g_idx = (torch.arange(IN_FEATURES) // GROUP).int()
    return [qweight, scales, qzeros, g_idx]


def get_init_inputs():
    return []
