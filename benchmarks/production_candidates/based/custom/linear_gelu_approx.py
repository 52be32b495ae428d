"""kdiff-control: based ops.triton.linear.triton_linear_act (gelu_approx, save_act_input)"""

import based_cpu as B
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, weight, bias):
        linear_act = B.linear().triton_linear_act
        return linear_act(x, weight, bias, activation="gelu_approx", save_act_input=True)
