"""SageAttention hunt: per-block int8 quantization of fp16 queries and keys (HND layout), queries
in blocks of 128 tokens pre-scaled by D^-0.5 * log2(e), keys in blocks of 64: per block the
scale absmax / 127, the codes x / scale + 0.5 sign(x) truncated; 200 queries and 100 keys, so
the last block of each is partial. The codes and the fp32 scales of both"""

import torch
import torch.nn as nn

B, H, LQ, LK, D = 1, 2, 200, 100, 64
BLKQ, BLKK = 128, 64


def _quant(x, block, pre_scale):
    x = x.float() * torch.tensor(pre_scale, dtype=torch.float32)
    codes, scales = torch.empty(x.shape, dtype=torch.int8), []
    for start in range(0, x.shape[2], block):
        part = x[:, :, start : start + block]
        scale = part.abs().amax(dim=(2, 3)) / 127.0
        q = part / scale[:, :, None, None]
        q = q + 0.5 * torch.where(q >= 0, 1.0, -1.0)
        codes[:, :, start : start + block] = q.to(torch.int8)
        scales.append(scale)
    return codes, torch.stack(scales, dim=-1)


class Model(nn.Module):
    def forward(self, q, k):
        q_codes, q_scale = _quant(q, BLKQ, D**-0.5 * 1.44269504)
        k_codes, k_scale = _quant(k, BLKK, 1.0)
        return q_codes, q_scale, k_codes, k_scale


def get_inputs():
    return [
        torch.randn(B, H, LQ, D, dtype=torch.float16),
        torch.randn(B, H, LK, D, dtype=torch.float16),
    ]


def get_init_inputs():
    return []
