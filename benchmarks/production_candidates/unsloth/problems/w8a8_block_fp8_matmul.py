"""unsloth hunt: a W8A8 blockwise fp8 linear layer, as unsloth's FP8 path computes it: the
activation quantized per row and 128 columns (DeepSeek-V3's act_quant: amax / 448), the
weight per 128 x 128 block, both to E4M3, then x W^T of the dequantized operands in fp32"""

import torch
import torch.nn as nn

M, N, K, BLOCK = 16, 256, 256, 128


def quantize_weight(w):
    """E4M3 codes of w and one scale (amax / 448) per BLOCK x BLOCK block."""
    blocks = w.reshape(w.shape[0] // BLOCK, BLOCK, w.shape[1] // BLOCK, BLOCK)
    s = blocks.abs().amax(dim=(1, 3)) / 448.0
    q = (blocks / s[:, None, :, None]).to(torch.float8_e4m3fn)
    return q.reshape(w.shape), s


class Model(nn.Module):
    def forward(self, x, w):
        xb = x.reshape(x.shape[0], -1, BLOCK)
        xs = xb.abs().amax(dim=-1, keepdim=True) / 448.0
        xq = ((xb / xs).to(torch.float8_e4m3fn).float() * xs).reshape(x.shape)
        wq, ws = quantize_weight(w)
        scale = ws.repeat_interleave(BLOCK, 0).repeat_interleave(BLOCK, 1)
        return xq @ (wq.float() * scale).T


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K) * 0.05]


def get_init_inputs():
    return []
