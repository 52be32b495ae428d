"""Chunked Triton Mamba-3 SISO, forward and training backward (kernels/mamba3/forward.py,
backward.py)."""
import torch.nn as nn

from kdiff.kernels.mamba3.backward import mamba3_siso
from kdiff.kernels.mamba3.problems import activations
from kdiff.kernels.mamba3.reference import States


class ModelNew(nn.Module):
    def forward(self, q, k, v, a, dt, trap, q_bias, k_bias, angles, D, z, angle_state,
                ssm_state, k_state, v_state):
        q, k, adt, dt = activations(q, k, a, dt)
        # chunks of 64 on a GPU; 16 on the CPU interpreter keeps the tiny problem quick
        out, states = mamba3_siso(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z,
                                  States(angle_state, ssm_state, k_state, v_state),
                                  chunk_size=64 if q.is_cuda else 16)
        return (out, *states)
