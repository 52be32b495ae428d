"""kdiff-control: SpargeAttn get_pool_sim_triton_simmean"""

import sparge_attn_cpu as S
import torch.nn as nn

BLOCK = 64


class ModelNew(nn.Module):
    def forward(self, x, thresholds):
        return S.load("utils").get_pool_sim_triton_simmean(x, BLOCK, thresholds)
