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
# how many blocks of tokens the rotations are computed in (mamba3_siso_recurrence)
ROTATION_BLOCKS = 64


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

    Returns (out [B, T, H, V], the final States), in q's dtype.

    Only the angle and the state are stepped token by token; what does not depend on them
    (the turns, the trapezoid's weights, the skip and the gate) is computed for every token
    at once, and the rotations for blocks of tokens, with the same operations in the same
    order on each element: the values are a token-by-token loop's, but where torch's
    vectorised exp, tanh, cos or sin round an element of a longer tensor an ulp apart. The
    float64 oracle
    traces each operation: a loop over tokens of all of them traced about 94 a token, this one
    about 16.
    """
    B, T, _, K = q.shape
    H, V = v.shape[2], v.shape[3]
    A = angles.shape[-1]
    q, k = expand_heads(q, H), expand_heads(k, H)
    states = initial_states if initial_states is not None else zero_states(B, H, K, V, A, q)
    theta, S, k_prev, v_prev = states
    if T == 0:
        return v.new_zeros(B, 0, H, V), States(theta, S, k_prev, v_prev)
    # The state loop runs on rows b * H + h, token-major, so that each token's operands are
    # one index each and its read-out one bmm: x [B, T, H, ...] or [B, H, T] -> [T, B * H, ...].
    rows = B * H

    def by_token(x: torch.Tensor, time_dim: int) -> torch.Tensor:
        x = x.movedim(time_dim, 0)
        return x.reshape(x.shape[0], rows, *x.shape[3:])

    turns = (math.pi * torch.tanh(angles) * dt.transpose(1, 2)[..., None]).unbind(1)
    thetas = []
    for turn in turns:
        theta = torch.remainder(theta + turn, TWO_PI)
        thetas.append(theta)
    # The oracle keeps one depth per tensor, its deepest element's, and theta's chain deepens
    # two roundings a token (the sum, the remainder): a block's rotation lends its last
    # token's depth to the block's others. Blocks of T / ROTATION_BLOCKS tokens keep the
    # outputs' depths (about 3 T) within 2 T / ROTATION_BLOCKS of a per-token rotation's.
    span = -(-T // ROTATION_BLOCKS)
    keys, queries = [], []
    for start in range(0, T, span):
        block = slice(start, start + span)
        turned = torch.stack(thetas[block], dim=1)
        keys += by_token(rotate(k[:, block] + k_bias, turned), 1)[..., None, :].unbind()
        queries += by_token(rotate(q[:, block] + q_bias, turned), 1)[..., None].unbind()
    lam = torch.sigmoid(trap)
    alpha = adt.exp()
    # S_t = alpha_t S_{t-1} + w_prev_t v_{t-1} k'_{t-1}^T + w_now_t v_t k'_t^T. Each operand is
    # unbound into its tokens once: a token's own tensor, not an index into all of them, which
    # the oracle would read whole at every token.
    w_prev = by_token((1 - lam) * dt * alpha, 2)[..., None, None].unbind()
    w_now = by_token(lam * dt, 2)[..., None, None].unbind()
    alpha = by_token(alpha, 2)[..., None, None].unbind()
    values = by_token(v, 1)[..., None].unbind()
    S = S.reshape(rows, V, K)
    pair_prev = v_prev.reshape(rows, V, 1) * k_prev.reshape(rows, 1, K)
    ys = []
    for t in range(T):
        pair_now = values[t] * keys[t]
        S = alpha[t] * S + w_prev[t] * pair_prev + w_now[t] * pair_now
        ys.append(torch.bmm(S, queries[t]))
        pair_prev = pair_now
    y = torch.stack(ys).reshape(T, B, H, V).transpose(0, 1)
    if D is not None:
        y = y + D[:, None] * v
    if z is not None:
        y = y * F.silu(z)
    return y, States(theta, S.reshape(B, H, V, K), keys[-1].reshape(B, H, K), v[:, -1])
