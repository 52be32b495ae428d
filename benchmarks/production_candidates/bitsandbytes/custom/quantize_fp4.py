"""kdiff-control: bitsandbytes quantize_4bit_blockwise_triton (FP4), as ops.quantize_4bit launches it"""

import bnb_cpu as B
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A):
        return B.quantize_4bit(A, 64, "fp4")
