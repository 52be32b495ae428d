"""kdiff-control: gemlite pack_weights_over_cols_triton (bitpack.py)"""

import gemlite_cpu as G
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, w_q):
        bitpack = G.load("bitpack")
        packed, _ = bitpack.pack_weights_over_cols_triton(
            w_q, W_nbits=4, packing_bitwidth=32, transpose=False
        )
        return packed
