"""triton_kernels hunt: the expert histogram of a routing bitmatrix (uint32 words, 32 experts
a word, bit e of a token's words set where the token goes to expert e): how many tokens each
expert gets, and the same per block of 32 tokens; int32; 100 tokens, 64 experts"""

import torch
import torch.nn as nn

TOKENS, WORDS = 100, 2


class Model(nn.Module):
    BLOCK = 32  # the partial sums' rows: the package's block, not a size of the problem

    def forward(self, words):
        bits = (words.long()[..., None] >> torch.arange(32)) & 1
        bits = bits.flatten(1)
        blocks = -(-bits.shape[0] // self.BLOCK)
        padded = torch.zeros(blocks * self.BLOCK, bits.shape[1], dtype=bits.dtype)
        padded[: bits.shape[0]] = bits
        partials = padded.view(blocks, self.BLOCK, -1).sum(1)
        return bits.sum(0).int(), partials.int()


def get_inputs():
    return [torch.randint(0, 2**32, (TOKENS, WORDS)).to(torch.uint32)]


def get_init_inputs():
    return []
