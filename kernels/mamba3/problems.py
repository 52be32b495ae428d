"""The inputs of the KernelBench level-3 Mamba-3 problems (kernelbench/KernelBench/level3:
the chunked forward, forward + training backward, the decode step), and the layer's
activations before the recurrence, shared by the references and the candidates.

The inputs are pre-activation, so every real input is inside the contract: q and k (the
layer's C and B) go through an RMS norm, dt through a softplus, the decay rate a through
-softplus (A < 0, adt = A dt); trap and the angles keep theirs inside the recurrence (sigmoid,
pi tanh). Each problem keeps its own sizes (module constants, read by get_inputs)."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.mamba3.forward import MAX_HEAD_DIM_K
from kdiff.kernels.mamba3.reference import States, mamba3_siso_recurrence


def within_shape_class(q: torch.Tensor, v: torch.Tensor, angles: torch.Tensor) -> None:
    """The problems' shape class (the references raise past it, so kdiff's CMP-03 does not
    judge such sizes): key pairs need an even key head dimension, up to MAX_HEAD_DIM_K (the
    layer's d_state is 128); at most one angle per pair; the key heads divide the heads."""
    K, A = q.shape[-1], angles.shape[-1]
    if K % 2 or K > MAX_HEAD_DIM_K or A > K // 2 or v.shape[-2] % q.shape[-2]:
        raise ValueError(f"outside the shape class: K={K}, A={A}, heads {v.shape[-2]} over "
                         f"{q.shape[-2]} key heads")


def activations(q, k, a, dt):
    """(q, k, adt, dt): q and k RMS-normed over K, dt = softplus(dt), adt = -softplus(a) dt."""
    dt = F.softplus(dt)
    return (F.rms_norm(q, (q.shape[-1],)), F.rms_norm(k, (k.shape[-1],)),
            -F.softplus(a) * dt, dt)


def angle_count(head_dim_qk: int) -> int:
    """The rotary angles: the layer's rope_fraction 0.5 turns half of the K / 2 pairs."""
    return head_dim_qk // 4


def sequence_inputs(batch_size: int, seq_len: int, num_heads_qk: int, heads_per_qk: int,
                    head_dim_qk: int, head_dim_v: int) -> list[torch.Tensor]:
    """[q, k, v, a, dt, trap, q_bias, k_bias, angles, D, z, angle_state, ssm_state, k_state,
    v_state], drawn in that order: q, k [B, T, Hqk, K]; v, z [B, T, H, V]; a, dt, trap
    [B, H, T] (dt shifted by -4: softplus gives steps near 0.02, inside the layer's initial
    0.001 to 0.1; a by +1: A near -1.3); q_bias, k_bias [H, K]; angles [B, T, H, A]; D [H];
    the states as reference.States."""
    B, T, K, V = batch_size, seq_len, head_dim_qk, head_dim_v
    H = num_heads_qk * heads_per_qk
    A = angle_count(K)
    q = torch.randn(B, T, num_heads_qk, K)
    k = torch.randn(B, T, num_heads_qk, K)
    v = torch.randn(B, T, H, V)
    a = torch.randn(B, H, T) + 1.0
    dt = torch.randn(B, H, T) - 4.0
    trap = torch.randn(B, H, T)
    q_bias = torch.randn(H, K)
    k_bias = torch.randn(H, K)
    angles = torch.randn(B, T, H, A)
    D = torch.randn(H)
    z = torch.randn(B, T, H, V)
    states = [torch.randn(B, H, A), torch.randn(B, H, V, K), torch.randn(B, H, K),
              torch.randn(B, H, V)]
    return [q, k, v, a, dt, trap, q_bias, k_bias, angles, D, z, *states]


def step_inputs(batch_size: int, num_heads_qk: int, heads_per_qk: int, head_dim_qk: int,
                head_dim_v: int) -> list[torch.Tensor]:
    """sequence_inputs of one token, without the time axis: q, k [B, Hqk, K]; v, z [B, H, V];
    a, dt, trap [B, H]; angles [B, H, A]."""
    inputs = sequence_inputs(batch_size, 1, num_heads_qk, heads_per_qk, head_dim_qk,
                             head_dim_v)
    for i in (0, 1, 2, 8, 10):
        inputs[i] = inputs[i].squeeze(1)
    for i in (3, 4, 5):
        inputs[i] = inputs[i].squeeze(-1)
    return inputs


def as_outputs(out: torch.Tensor, states: States) -> tuple[torch.Tensor, ...]:
    """(out, angle_state, ssm_state, k_state, v_state)."""
    return (out, *states)


class SequenceModel(nn.Module):
    """The reference of problems 1 and 2: the sequential recurrence after the activations.
    Returns (out [B, T, H, V], angle_state, ssm_state, k_state, v_state)."""

    def forward(self, q, k, v, a, dt, trap, q_bias, k_bias, angles, D, z, angle_state,
                ssm_state, k_state, v_state):
        within_shape_class(q, v, angles)
        q, k, adt, dt = activations(q, k, a, dt)
        return as_outputs(*mamba3_siso_recurrence(
            q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z,
            States(angle_state, ssm_state, k_state, v_state)))


class StepModel(nn.Module):
    """The reference of problem 3: one token (a sequence of length one) through the same
    recurrence. Returns (out [B, H, V], angle_state, ssm_state, k_state, v_state)."""

    def forward(self, q, k, v, a, dt, trap, q_bias, k_bias, angles, D, z, angle_state,
                ssm_state, k_state, v_state):
        out, *states = SequenceModel()(
            q[:, None], k[:, None], v[:, None], a[..., None], dt[..., None], trap[..., None],
            q_bias, k_bias, angles[:, None], D, None if z is None else z[:, None],
            angle_state, ssm_state, k_state, v_state)
        return (out[:, 0], *states)
