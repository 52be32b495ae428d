"""lmdeploy hunt: DeepSeek-V3's grouped top-k router (noaux_tc): sigmoid scores, a bias for the
choice only; 64 experts in 4 groups, a group scored by its best two biased scores, the best 2
groups kept (the others' biased scores set to 0, as DeepSeek's reference masks them), the top
4 experts of those, their unbiased scores renormalised (+1e-20) and scaled by 2.5; the fp32
weights and the int64 expert ids, best first"""

import torch
import torch.nn as nn

T, E, GROUPS, TOPK_GROUP, TOP_K = 8, 64, 4, 2, 4
SCALE = 2.5


class Model(nn.Module):
    def forward(self, logits, bias):
        scores = logits.float().sigmoid()
        choice = scores + bias.float()
        group_scores = choice.view(T, GROUPS, -1).topk(2, dim=-1).values.sum(-1)
        groups = group_scores.topk(TOPK_GROUP, dim=-1).indices
        keep = torch.zeros(T, GROUPS, dtype=torch.bool).scatter_(1, groups, True)
        keep = keep[:, :, None].expand(T, GROUPS, E // GROUPS).reshape(T, E)
        ids = choice.masked_fill(~keep, 0.0).topk(TOP_K, dim=-1).indices
        weights = scores.gather(1, ids)
        weights = weights / (weights.sum(-1, keepdim=True) + 1e-20) * SCALE
        return weights, ids


def get_inputs():
    return [torch.randn(T, E), 0.1 * torch.randn(E)]


def get_init_inputs():
    return []
