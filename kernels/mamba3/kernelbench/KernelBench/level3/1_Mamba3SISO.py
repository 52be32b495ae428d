"""Mamba-3 SISO forward (state-spaces/mamba, mamba_ssm/ops/triton/mamba3): the trapezoidal
recurrence with the rotary (complex) state, kernels/mamba3/reference.py:

    theta_t = (theta_{t-1} + pi tanh(angles_t) dt_t) mod 2 pi,  q', k' turned by theta_t
    S_t = alpha_t S_{t-1} + (1 - lam_t) dt_t alpha_t v_{t-1} k'_{t-1}^T + lam_t dt_t v_t k'_t^T
    out_t = (S_t q'_t + D v_t) silu(z_t)

with alpha = exp(adt), lam = sigmoid(trap), and the layer's activations before it (q, k
RMS-normed; dt = softplus; adt = -softplus(a) dt). Inputs are pre-activation, so every real
input is inside the contract (problems.py). Outputs: out [B, T, H, V] and the final angle
[B, H, A], SSM [B, H, V, K], key [B, H, K] and value [B, H, V] states. The reference is the
sequential recurrence, run in the working precision.
"""
from kdiff.kernels.mamba3.problems import SequenceModel, sequence_inputs
from kdiff.kernels.mamba3.reference import TWO_PI

KDIFF_DTYPES = ("float32", "bfloat16")
# Output 1, the angle state, is an angle: whole turns apart are the same state.
KDIFF_PERIODIC_OUTPUTS = {1: TWO_PI}


class Model(SequenceModel):
    pass


batch_size = 1
seq_len = 24
num_heads_qk = 1
heads_per_qk = 2
head_dim_qk = 16
head_dim_v = 16


def get_inputs():
    return sequence_inputs(batch_size, seq_len, num_heads_qk, heads_per_qk, head_dim_qk,
                           head_dim_v)


def get_init_inputs():
    return []
