"""kdiff-control: bitsandbytes dequant_8bit_blockwise (8-bit dynamic code)"""

import bnb_cpu as B
import torch
import torch.nn as nn

CODE = B.dynamic_map()


class ModelNew(nn.Module):
    def forward(self, q, absmax):
        # the caller's block size (bitsandbytes keeps it in its QuantState): one absmax a block
        blocksize = q.numel() // absmax.numel()
        # ops.dequantize_blockwise: a contiguous copy in
        return B.load("kernels_8bit_quant").dequant_8bit_blockwise(
            q.contiguous(), absmax, CODE, blocksize, dtype=torch.float32
        )
