"""MInference hunt: XAttention's strided scores (`flat_group_gemm_fuse_reshape`, not causal):
q and k (batch, heads, n, dim) fp16 in groups of STRIDE tokens; out[i, j] sums, over s, the
product of query STRIDE * i + STRIDE - 1 - s with key STRIDE * j + s (each group's queries
antidiagonal to its keys), fp16 out"""

import torch
import torch.nn as nn

B, H, N, D = 1, 2, 512, 64
STRIDE = 4
KDIFF_ACCUMULATION = "float32"  # MInference serves fp16/bf16; its tl.dot accumulates in fp32


class Model(nn.Module):
    def forward(self, q, k):
        # the class the launcher serves: n a multiple of STRIDE x its 128-row blocks
        # (asserted), head dims a power of two from 16 (one tl.arange over the head dim)
        assert q.shape[2] % (STRIDE * 128) == 0 and k.shape[2] % (STRIDE * 128) == 0
        assert q.shape[-1] in (16, 32, 64, 128, 256)
        queries = q.unflatten(2, (-1, STRIDE)).flip(3).flatten(3)
        keys = k.unflatten(2, (-1, STRIDE)).flatten(3)
        return (queries.float() @ keys.float().transpose(-1, -2)).to(q.dtype)


def get_inputs():
    return [torch.randn(B, H, N, D).half(), torch.randn(B, H, N, D).half()]


def get_init_inputs():
    return []
