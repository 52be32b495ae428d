"""SpargeAttn hunt: per block of 64 tokens (batch, heads, tokens, head dim; fp16), the mean token
(fp16) and whether the block is self-similar: the mean of the Gram matrix of its rows, each
normalised and rounded to fp16, above the head's threshold. Tokens in whole blocks."""

import torch
import torch.nn as nn

B, H, TOKENS, D = 1, 4, 256, 64


class Model(nn.Module):
    def forward(self, x, thresholds):
        b, h, n, d = x.shape
        # the class the launcher serves: blocks of 64 tokens, whole (a partial block's masked
        # rows are loaded with no value given), head dims a power of two from 16 (tl.dot)
        assert n % 64 == 0 and d in (16, 32, 64, 128, 256)
        blocks = x.float().reshape(b, h, n // 64, 64, d)
        pool = blocks.mean(-2).to(x.dtype)
        rows = (blocks / blocks.norm(dim=-1, keepdim=True)).to(x.dtype).float()
        grams = rows @ rows.transpose(-1, -2)
        similar = grams.sum((-1, -2)) / 64 ** 2 > thresholds[None, :, None]
        return pool, similar


def get_inputs():
    # tokens of a block share a direction in part, so that blocks fall on both sides
    x = torch.randn(B, H, TOKENS // 64, 1, D) + torch.randn(B, H, TOKENS // 64, 64, D)
    return [x.reshape(B, H, TOKENS, D).half(), torch.full((H,), 0.5)]


def get_init_inputs():
    return []
