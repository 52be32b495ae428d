"""kdiff-control: triton-lang/kernels matmul (autotuned; fp32 accumulator)"""

import torch.nn as nn
import triton_lang_kernels_cpu as K


class ModelNew(nn.Module):
    def forward(self, a, b):
        return K.load("matmul").matmul(a, b)
