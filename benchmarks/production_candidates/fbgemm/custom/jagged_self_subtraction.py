"""kdiff-control: FBGEMM sll triton_jagged_self_substraction_jagged_out"""

import fbgemm_cpu as F
import torch.nn as nn

MAX_SEQ_LEN = 16


class ModelNew(nn.Module):
    def forward(self, values, offsets, out_offsets):
        module = F.load("sll.triton.triton_jagged_self_substraction_jagged_out")
        return module.triton_jagged_self_substraction_jagged_out(values, offsets, out_offsets, MAX_SEQ_LEN)
