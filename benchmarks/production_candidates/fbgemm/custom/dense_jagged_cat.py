"""kdiff-control: FBGEMM sll dense_jagged_cat_jagged_out"""

import fbgemm_cpu as F
import torch.nn as nn

MAX_SEQ_LEN = 20


class ModelNew(nn.Module):
    def forward(self, dense, values, offsets):
        cat = F.load("sll.triton.triton_dense_jagged_cat_jagged_out").dense_jagged_cat_jagged_out
        return cat(dense, values, offsets, MAX_SEQ_LEN)
