"""Triton Mamba-3 SISO decode step (kernels/mamba3/recurrent.py)."""
import torch.nn as nn

from kdiff.kernels.mamba3.forward import mamba3_siso_step
from kdiff.kernels.mamba3.problems import activations
from kdiff.kernels.mamba3.reference import States


class ModelNew(nn.Module):
    def forward(self, q, k, v, a, dt, trap, q_bias, k_bias, angles, D, z, angle_state,
                ssm_state, k_state, v_state):
        q, k, adt, dt = activations(q, k, a, dt)
        out, states = mamba3_siso_step(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z,
                                       States(angle_state, ssm_state, k_state, v_state))
        return (out, *states)
