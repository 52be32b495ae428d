"""kdiff-control: FBGEMM sll JaggedSoftmax (Triton forward and backward)"""

import fbgemm_cpu as F
import torch.nn as nn

MAX_SEQ_LEN = 20


class ModelNew(nn.Module):
    def forward(self, values, offsets):
        softmax = F.load("sll.triton.triton_jagged_softmax").JaggedSoftmax
        return softmax.apply(values, offsets, MAX_SEQ_LEN)
