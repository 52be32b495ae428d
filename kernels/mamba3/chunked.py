"""The chunked form of the SISO recurrence (reference.py), in PyTorch: the algorithm that the
Triton forward (forward.py) runs per chunk, written with whole-tensor operations so that it
can be checked against the sequential oracle on its own (tests/test_mamba3.py).

Unrolled, the trapezoidal rule gives every token s one weight on its rank-one term v_s k'_s^T:
lam_s dt_s at its own step, and (1 - lam_{s+1}) dt_{s+1} alpha_{s+1} at the next (the
"shifted" term), after which both decay alike. So within a chunk, with la the chunk-local
inclusive cumsum of adt and S the state entering the chunk:

    scale_s = lam_s dt_s + (1 - lam_{s+1}) dt_{s+1}     (the second term 0 past the sequence)
    P_rs = (q'_r . k'_s) exp(la_r - la_s) * (scale_s for s < r, lam_r dt_r for s = r, 0 above)
    y_r = exp(la_r) S q'_r + sum_s P_rs v_s + D v_r
    S <- exp(la_last) S + sum_s exp(la_last - la_s) scale_s v_s k'_s^T

The state leaving a chunk already holds the next chunk's first shifted term (scale, not
lam dt), which the next chunk decays by its alpha; at the sequence end the shifted term is 0
and the state is the recurrence's S_T. The carried-in previous key and value enter once, at
the start: S_0 = S_init + (1 - lam_0) dt_0 v_init k_init^T (alpha_0 applied by la).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from kdiff.kernels.mamba3.reference import TWO_PI, States, expand_heads, rotate, zero_states


def phases(angles: torch.Tensor, dt: torch.Tensor, theta0: torch.Tensor) -> torch.Tensor:
    """theta [B, T, H, A]: theta0 plus the running sum of pi tanh(angles) dt, mod 2 pi: the
    same angles as the oracle's per-token reduction up to rounding, on either side of 0 = 2 pi
    where a tiny step crosses it (forward.turn_sums_kernel sums per block of tokens)."""
    steps = math.pi * torch.tanh(angles) * dt.transpose(1, 2)[..., None]
    return torch.remainder(theta0[:, None] + steps.cumsum(dim=1), TWO_PI)


def token_weights(dt: torch.Tensor, trap: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(gamma, scale) [B, H, T]: lam dt, and lam dt plus the next token's (1 - lam) dt."""
    lam = torch.sigmoid(trap)
    gamma = lam * dt
    shifted = F.pad(((1 - lam) * dt)[..., 1:], (0, 1))
    return gamma, gamma + shifted


def mamba3_siso_chunked(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D=None, z=None,
                        initial_states: States | None = None,
                        chunk_size: int = 16) -> tuple[torch.Tensor, States]:
    """Arguments and results as reference.mamba3_siso_recurrence."""
    B, T, _, K = q.shape
    H, V = v.shape[2], v.shape[3]
    A = angles.shape[-1]
    q, k = expand_heads(q, H), expand_heads(k, H)
    states = initial_states if initial_states is not None else zero_states(B, H, K, V, A, q)
    theta = phases(angles, dt, states.angle)
    qr = rotate(q + q_bias, theta)  # [B, T, H, K]
    kr = rotate(k + k_bias, theta)
    gamma, scale = token_weights(dt, trap)
    lam0 = torch.sigmoid(trap[:, :, :1])
    S = states.ssm + ((1 - lam0) * dt[:, :, :1])[..., None] * (
        states.v[..., :, None] * states.k[..., None, :])
    outs = []
    for c0 in range(0, T, chunk_size):
        c1 = min(c0 + chunk_size, T)
        la = adt[:, :, c0:c1].cumsum(dim=-1)  # [B, H, C]
        C = c1 - c0
        below = torch.ones(C, C, dtype=torch.bool, device=q.device).tril(-1)
        diag = torch.eye(C, dtype=torch.bool, device=q.device)
        diff = la[..., :, None] - la[..., None, :]
        decay = torch.where(below | diag, diff, -math.inf).exp()
        w = torch.where(diag, gamma[:, :, None, c0:c1], scale[:, :, None, c0:c1])
        qc, kc, vc = qr[:, c0:c1], kr[:, c0:c1], v[:, c0:c1]
        P = torch.einsum("brhk,bshk->bhrs", qc, kc) * decay * w
        y = (torch.einsum("bhvk,brhk->brhv", S, qc) * la.exp().transpose(1, 2)[..., None]
             + torch.einsum("bhrs,bshv->brhv", P, vc))
        if D is not None:
            y = y + D[:, None] * vc
        if z is not None:
            y = y * F.silu(z[:, c0:c1])
        outs.append(y)
        last = (la[..., -1:] - la).exp() * scale[:, :, c0:c1]  # [B, H, C]
        S = (la[..., -1].exp()[..., None, None] * S
             + torch.einsum("bsh,bshv,bshk->bhvk", last.transpose(1, 2), vc, kc))
    if T == 0:
        return v.new_zeros(B, 0, H, V), states
    return torch.cat(outs, dim=1), States(theta[:, -1], S, kr[:, -1], v[:, -1])
