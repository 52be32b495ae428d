"""Gated DeltaNet over packed variable-length sequences: problem 1's recurrence, with the
batch's sequences packed along T and delimited by `cu_seqlens` [N + 1] (batch size 1), each
starting from its own initial state [N, H, K, V]. The packing is drawn with the other inputs:
three sequences split at two random points (one sequence when seq_len is too short for
three), so every held-out seq_len gives a valid packing and every draw another one. A kernel
that keeps what it derived from `cu_seqlens` (chunk indices) by the tensor's identity answers
a kept `cu_seqlens` overwritten in place with the old packing; CMP-02's in-place calls
rewrite it with another draw's. The reference is the sequential recurrence, run in the
working precision; training backward is judged too (cu_seqlens has no gradient, and the
distribution strategies never perturb an integer input).
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
    *tensors, _ = recurrence_inputs(1, seq_len, num_heads, head_dim_k, head_dim_v, beta=True)
    # Two distinct cut points in 1 .. seq_len - 1 (at 40 tokens, lengths that are rarely a
    # multiple of a chunk, 16 or 64): three sequences, each at least one token long.
    inner = (torch.randperm(seq_len - 1)[:2] + 1).sort().values.tolist() if seq_len >= 3 else []
    cuts = [0, *inner, seq_len]
    initial_state = torch.randn(len(cuts) - 1, num_heads, head_dim_k, head_dim_v)
    return [*tensors, initial_state, torch.tensor(cuts, dtype=torch.int64)]


def get_init_inputs():
    return []
