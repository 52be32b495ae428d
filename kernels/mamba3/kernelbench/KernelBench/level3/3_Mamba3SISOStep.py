"""Mamba-3 SISO decode step (mamba_ssm's mamba3_siso_step): problem 1's recurrence for one
token, from the carried angle, SSM, key and value states to the next (kernels/mamba3/
problems.py). Inputs: q, k [B, Hqk, K]; v, z [B, H, V]; a, dt, trap [B, H]; q_bias, k_bias
[H, K]; angles [B, H, A]; D [H]; the four states. Outputs: out [B, H, V] and the next states.
"""
from kdiff.kernels.mamba3.problems import StepModel, step_inputs
from kdiff.kernels.mamba3.reference import TWO_PI

KDIFF_DTYPES = ("float32", "bfloat16")
# Output 1, the angle state, is an angle: whole turns apart are the same state.
KDIFF_PERIODIC_OUTPUTS = {1: TWO_PI}


class Model(StepModel):
    pass


batch_size = 2
num_heads_qk = 1
heads_per_qk = 2
head_dim_qk = 16
head_dim_v = 16


def get_inputs():
    return step_inputs(batch_size, num_heads_qk, heads_per_qk, head_dim_qk, head_dim_v)


def get_init_inputs():
    return []
