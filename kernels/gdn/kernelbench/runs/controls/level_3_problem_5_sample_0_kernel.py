"""
The packed varlen recurrence in torch, step by step in the working precision (the problem's
reference function, called as a candidate would): the control beside the red-team kernel of
the same problem, which differs from it only in how it reads `cu_seqlens`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.gdn.reference import gated_delta_rule_reference


class ModelNew(nn.Module):
    def forward(self, q, k, v, g, beta, initial_state, cu_seqlens):
        return gated_delta_rule_reference(q, F.normalize(k, dim=-1), v, F.logsigmoid(g),
                                          torch.sigmoid(beta), initial_state=initial_state,
                                          cu_seqlens=cu_seqlens)
