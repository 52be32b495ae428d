"""kdiff-control: FBGEMM sll JaggedDenseBmm (Triton forward; backward by jagged x dense and
jagged^T x jagged), allow_tf32 off"""

import fbgemm_cpu as F
import torch.nn as nn

MAX_SEQ_LEN = 20


class ModelNew(nn.Module):
    def forward(self, values, dense, offsets):
        bmm = F.load("sll.triton.triton_jagged_bmm").JaggedDenseBmm
        return bmm.apply(values, dense, offsets, MAX_SEQ_LEN, False)
