"""flashinfer hunt: variable_length_merge_states (each position merges the partial results
indptr[i]:indptr[i+1] by their base-2 LSEs; every set non-empty)"""

import torch
import torch.nn as nn

INDPTR = [0, 2, 3, 6, 7]


class Model(nn.Module):
    def forward(self, v, s):
        outs, lses = [], []
        for start, end in zip(INDPTR[:-1], INDPTR[1:]):
            lse = torch.logsumexp(s[start:end] * torch.log(torch.tensor(2.0)), dim=0) / torch.log(torch.tensor(2.0))
            w = torch.exp2(s[start:end] - lse).unsqueeze(-1)
            outs.append((v[start:end] * w).sum(0))
            lses.append(lse)
        return torch.stack(outs), torch.stack(lses)


H, D = 4, 16


def get_inputs():
    return [torch.randn(INDPTR[-1], H, D), torch.randn(INDPTR[-1], H) * 4]


def get_init_inputs():
    return []
