"""kdiff-control: unsloth w8a8_block_fp8_matmul_triton (fp8.py, adapted from SGLang), its
activation quantized by unsloth's act_quant, the weight by the problem's blockwise quantizer"""

import torch.nn as nn
import unsloth_cpu as U
from w8a8_block_fp8_matmul import BLOCK, quantize_weight


class ModelNew(nn.Module):
    def forward(self, x, w):
        fp8 = U.load("fp8")
        xq, xs = fp8.act_quant(x, BLOCK)
        wq, ws = quantize_weight(w)
        return fp8.w8a8_block_fp8_matmul_triton(xq, wq, xs, ws, [BLOCK, BLOCK])
