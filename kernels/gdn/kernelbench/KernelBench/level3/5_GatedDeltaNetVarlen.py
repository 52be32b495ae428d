"""Gated DeltaNet over packed variable-length sequences: problem 1's recurrence, with the
batch's sequences packed along T and delimited by `cu_seqlens` [N + 1] (batch size 1), each
starting from its own initial state [N, H, K, V]. The split is drawn from the sizes, so every
held-out seq_len gives a valid packing (one sequence when it is too short for three). The
reference is the sequential recurrence, run in the working precision; training backward is
judged too (cu_seqlens is an integer input: never perturbed, no gradient).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.gdn.problems import recurrence_inputs, within_shape_class
from kdiff.kernels.gdn.reference import gated_delta_rule_reference

KDIFF_BACKWARD = True


class Model(nn.Module):
    def forward(self, q, k, v, g, beta, initial_state, cu_seqlens):
        within_shape_class(k)
        k = F.normalize(k, dim=-1)
        return gated_delta_rule_reference(q, k, v, F.logsigmoid(g), torch.sigmoid(beta),
                                          initial_state=initial_state, cu_seqlens=cu_seqlens)


seq_len = 40
num_heads = 2
head_dim_k = 16
head_dim_v = 16


def get_inputs():
    # Three sequences of unequal lengths, none a multiple of a chunk (16 or 64), when T allows.
    cuts = [0, seq_len // 5, seq_len // 2, seq_len] if seq_len >= 3 else [0, seq_len]
    *tensors, _ = recurrence_inputs(1, seq_len, num_heads, head_dim_k, head_dim_v, beta=True)
    initial_state = torch.randn(len(cuts) - 1, num_heads, head_dim_k, head_dim_v)
    return [*tensors, initial_state, torch.tensor(cuts, dtype=torch.int64)]


def get_init_inputs():
    return []
