"""Mamba-3 SISO forward and training backward: problem 1's recurrence and inputs
(kernels/mamba3/problems.py), judged on the gradients against every input too."""
from kdiff.kernels.mamba3.problems import SequenceModel, sequence_inputs
from kdiff.kernels.mamba3.reference import TWO_PI

KDIFF_DTYPES = ("float32", "bfloat16")
# Output 1, the angle state, is an angle: whole turns apart are the same state.
KDIFF_PERIODIC_OUTPUTS = {1: TWO_PI}
KDIFF_BACKWARD = True


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
