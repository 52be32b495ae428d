"""The oracle: Mamba-3's SISO recurrence (exponential-trapezoidal discretisation, complex state
as data-dependent rotary embeddings), stepped one token at a time, written from the equations
(NOTES.md, "The recurrence") and nothing else: no chunking, no segment sums.

Per head, state S in R^{V x K} (mamba_ssm's layout), with the previous token's rotated key
k'_{t-1} and value v_{t-1} carried beside it:

    theta_t = (theta_{t-1} + pi tanh(angles_t) dt_t) mod 2 pi          (one angle per key pair)
    q'_t, k'_t = R(theta_t) (q_t + q_bias), R(theta_t) (k_t + k_bias)  (pairs (2i, 2i+1) turned
                                                                        by theta_t[i]; pairs past
                                                                        the angles unturned)
    lam_t = sigmoid(trap_t),  alpha_t = exp(adt_t)
    S_t = alpha_t S_{t-1} + (1 - lam_t) dt_t alpha_t v_{t-1} k'_{t-1}^T + lam_t dt_t v_t k'_t^T
    y_t = S_t q'_t + D v_t,   out_t = y_t * silu(z_t)

The two rank-one terms are the trapezoidal rule: the input at t enters with weight lam dt,
the one at t - 1 with (1 - lam) dt, decayed by alpha_t. Called on float64 tensors it is the
float64 oracle, and autograd through it gives the training gradients (the mod's derivative
is 1: torch.remainder's).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

TWO_PI = 2 * math.pi


class States(NamedTuple):
    """What one call hands the next: angle [N, H, A], ssm [N, H, V, K], k [N, H, K] (the last
    rotated key, biases included), v [N, H, V] (the last value)."""
    angle: torch.Tensor
    ssm: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor


def expand_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """q or k [..., Hqk, K] to [..., heads, K]: head h reads key head h // (heads / Hqk)."""
    return x.repeat_interleave(heads // x.shape[-2], dim=-2)


def rotate(x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """x [..., K] with its pairs (2i, 2i+1), i < A, turned by theta [..., A] (A <= K / 2)."""
    A = theta.shape[-1]
    pairs = x.unflatten(-1, (-1, 2))
    x0, x1 = pairs[..., :A, 0], pairs[..., :A, 1]
    cos, sin = theta.cos(), theta.sin()
    turned = torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)
    return torch.cat([turned, pairs[..., A:, :]], dim=-2).flatten(-2)


def zero_states(batch: int, heads: int, K: int, V: int, A: int,
                like: torch.Tensor) -> States:
    return States(like.new_zeros(batch, heads, A), like.new_zeros(batch, heads, V, K),
                  like.new_zeros(batch, heads, K), like.new_zeros(batch, heads, V))


def mamba3_siso_recurrence(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D=None, z=None,
                           initial_states: States | None = None) -> tuple[torch.Tensor, States]:
    """q, k [B, T, Hqk, K] (Hqk divides H); v [B, T, H, V]; adt, dt, trap [B, H, T] (adt the
    log-decay A dt, trap before its sigmoid); q_bias, k_bias [H, K]; angles [B, T, H, A]
    before their tanh (A <= K / 2); D [H]; z [B, T, H, V]; initial_states (States, N = B).

    Returns (out [B, T, H, V], the final States), in q's dtype."""
    B, T, _, K = q.shape
    H, V = v.shape[2], v.shape[3]
    A = angles.shape[-1]
    q, k = expand_heads(q, H), expand_heads(k, H)
    states = initial_states if initial_states is not None else zero_states(B, H, K, V, A, q)
    theta, S, k_prev, v_prev = states
    lam = torch.sigmoid(trap)
    outs = []
    for t in range(T):
        theta = torch.remainder(theta + math.pi * torch.tanh(angles[:, t]) * dt[:, :, t, None],
                                TWO_PI)
        qt = rotate(q[:, t] + q_bias, theta)
        kt = rotate(k[:, t] + k_bias, theta)
        alpha = adt[:, :, t].exp()[..., None, None]
        step = dt[:, :, t, None, None]
        S = (alpha * S + (1 - lam[:, :, t, None, None]) * step * alpha
             * (v_prev[..., :, None] * k_prev[..., None, :])
             + lam[:, :, t, None, None] * step * (v[:, t, :, :, None] * kt[..., None, :]))
        y = torch.einsum("bhvk,bhk->bhv", S, qt)
        if D is not None:
            y = y + D[:, None] * v[:, t]
        if z is not None:
            y = y * F.silu(z[:, t])
        outs.append(y)
        k_prev, v_prev = kt, v[:, t]
    out = torch.stack(outs, dim=1) if outs else v.new_zeros(B, 0, H, V)
    return out, States(theta, S, k_prev, v_prev)
