"""Kimi Delta Attention (KDA; Kimi Team, "Kimi Linear: An Expressive, Efficient Attention
Architecture", 2025), per-channel gate with the delta rule:

    S_t = (I - beta_t k_t k_t^T) diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T,   o_t = S_t^T q_t / sqrt(K)

with the activations applied before the recurrence: k L2-normalised, g = logsigmoid (one decay
in (0, 1) per key channel), beta = sigmoid. The inputs are pre-activation, so every real input
is inside the contract. Outputs: o [B, T, H, V] and the final state [B, H, K, V]. The reference
is the sequential recurrence, run in the working precision; training backward is judged too.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.gdn.problems import recurrence_inputs, within_shape_class
from kdiff.kernels.gdn.reference import gated_recurrence

KDIFF_BACKWARD = True


class Model(nn.Module):
    def forward(self, q, k, v, g, beta, initial_state):
        within_shape_class(k)
        k = F.normalize(k, dim=-1)
        return gated_recurrence(q, k, v, F.logsigmoid(g), torch.sigmoid(beta),
                                initial_state=initial_state)


batch_size = 1
seq_len = 24
num_heads = 2
head_dim_k = 16
head_dim_v = 16


def get_inputs():
    return recurrence_inputs(batch_size, seq_len, num_heads, head_dim_k, head_dim_v,
                             per_channel_gate=True, beta=True)


def get_init_inputs():
    return []
