"""MInference hunt: KIVI's decoding scores against 2-bit keys (`triton_bmm_fA_qB_outer`): a
query (batch, heads, 1, dim) fp16 times keys (batch, heads, dim, tokens) held as 2-bit codes,
sixteen to an int32 (the i-th in bits 2i, 2i + 1), dequantized as code * scale + zero with a
scale and zero per channel and group of GROUP tokens; fp16 out (batch, heads, 1, tokens)"""

import torch
import torch.nn as nn

B, NH, D, T = 1, 2, 64, 128
GROUP, BITS = 64, 2
KDIFF_ACCUMULATION = "float32"  # KIVI's kernel sums its products in an fp32 accumulator


class Model(nn.Module):
    def forward(self, query, words, scales, zeros):
        # the class the launcher serves: one query row, 2-bit codes in groups of 64 tokens
        # (the candidate's), tokens a multiple of 64
        assert query.shape[2] == 1 and words.shape[-1] * 16 == scales.shape[-1] * 64
        assert words.shape[-1] * 16 % 64 == 0
        shifts = torch.arange(32 // BITS, dtype=torch.int32) * BITS
        codes = ((words[..., None] >> shifts) & (2**BITS - 1)).flatten(-2)
        keys = codes.float() * scales.float().repeat_interleave(GROUP, -1) + zeros.float().repeat_interleave(GROUP, -1)
        return (query.float() @ keys).to(query.dtype)


def get_inputs():
    words = torch.randint(-(2**31), 2**31 - 1, (B, NH, D, T * BITS // 32), dtype=torch.int32)
    scales = (torch.rand(B, NH, D, T // GROUP) * 0.5 + 0.05).half()
    zeros = torch.randn(B, NH, D, T // GROUP).half()
    return [torch.randn(B, NH, 1, D).half(), words, scales, zeros]


def get_init_inputs():
    return []
