"""
kdiff-control: Liger-Kernel's total variation distance (LigerTVDLossFunction, batchmean) on softmaxed logits
"""
import torch
import torch.nn as nn
from liger_kernel.ops.tvd import LigerTVDLossFunction


class ModelNew(nn.Module):
    def forward(self, logits_p, logits_q):
        p = torch.softmax(logits_p, dim=-1)
        q = torch.softmax(logits_q, dim=-1)
        return LigerTVDLossFunction.apply(p, q)
