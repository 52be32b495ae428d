"""Token-by-token Mamba-3 SISO (reference.py's operations, one token after another): the
decode step (a sequence of one token) and the chunked forward's fallback (forward.py).

Each program holds one head's [BV, K] slice of the state in registers, as its two halves of
key pairs (columns 2j and 2j + 1), in fp32, and walks its sequence's tokens. Per token it
forms the reference's own operations in the reference's association: the phase in fp64,
the rotations, S = alpha S + ((1 - lam) dt alpha) v_prev k_prev^T + (lam dt) v k^T, then
y = S q (a reduction over K) + D v and out = y silu(z). So a NaN or an Inf reaches what
the recurrence's does, element for element. The angle, key and value states are written by
the V-blocks' first program.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kdiff.kernels.mamba3.ops import advance_phase, pair_offsets, sigmoid, silu, turn


@triton.jit
def recurrent_fwd_kernel(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z,
                         theta0, S0, k0, v0, out, thetaT, ST, kT, vT, when,
                         T, H, G, K, V, A,
                         BK2: tl.constexpr, BV: tl.constexpr, HAS_D: tl.constexpr,
                         HAS_Z: tl.constexpr, GATED: tl.constexpr):
    """Grid (V-blocks, H, B). q, k [B, T, H / G, K]; v, z, out [B, T, H, V]; adt, dt, trap
    [B, H, T]; angles [B, T, H, A]; states as reference.States (all given). GATED: return at
    once unless when[0] != 0 (the chunked forward's fallback decision)."""
    if GATED:
        if tl.load(when) == 0:
            return
    i_v, h, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    bh = b.to(tl.int64) * H + h
    hq = h // G
    Hq = H // G
    j, jm = pair_offsets(K, BK2)
    am = j < A
    cv = i_v * BV + tl.arange(0, BV)
    vm = cv < V
    sm = vm[:, None] & jm[None, :]
    soff = bh * V * K + cv[:, None] * K + 2 * j[None, :]
    Se = tl.load(S0 + soff, mask=sm, other=0.0).to(tl.float32)
    So = tl.load(S0 + soff + 1, mask=sm, other=0.0).to(tl.float32)
    theta = tl.load(theta0 + bh * A + j, mask=am, other=0.0).to(tl.float64)
    kpe = tl.load(k0 + bh * K + 2 * j, mask=jm, other=0.0).to(tl.float32)
    kpo = tl.load(k0 + bh * K + 2 * j + 1, mask=jm, other=0.0).to(tl.float32)
    vp = tl.load(v0 + bh * V + cv, mask=vm, other=0.0).to(tl.float32)
    qbe = tl.load(q_bias + h * K + 2 * j, mask=jm, other=0.0).to(tl.float32)
    qbo = tl.load(q_bias + h * K + 2 * j + 1, mask=jm, other=0.0).to(tl.float32)
    kbe = tl.load(k_bias + h * K + 2 * j, mask=jm, other=0.0).to(tl.float32)
    kbo = tl.load(k_bias + h * K + 2 * j + 1, mask=jm, other=0.0).to(tl.float32)
    if HAS_D:
        d_h = tl.load(D + h).to(tl.float32)
    for t in range(T):
        row = b.to(tl.int64) * T + t
        qk_row = (row * Hq + hq) * K
        v_row = (row * H + h) * V
        g = bh * T + t
        dt_t = tl.load(dt + g).to(tl.float32)
        ang = tl.load(angles + (row * H + h) * A + j, mask=am, other=0.0)
        theta = tl.where(am, advance_phase(theta, ang, dt_t), theta)
        cos = tl.cos(theta).to(tl.float32)
        sin = tl.sin(theta).to(tl.float32)
        qe, qo = turn(tl.load(q + qk_row + 2 * j, mask=jm, other=0.0).to(tl.float32) + qbe,
                      tl.load(q + qk_row + 2 * j + 1, mask=jm, other=0.0).to(tl.float32) + qbo,
                      cos, sin, am)
        ke, ko = turn(tl.load(k + qk_row + 2 * j, mask=jm, other=0.0).to(tl.float32) + kbe,
                      tl.load(k + qk_row + 2 * j + 1, mask=jm, other=0.0).to(tl.float32) + kbo,
                      cos, sin, am)
        vt = tl.load(v + v_row + cv, mask=vm, other=0.0).to(tl.float32)
        lam = sigmoid(tl.load(trap + g).to(tl.float32))
        alpha = tl.exp(tl.load(adt + g).to(tl.float32))
        prev = (1 - lam) * dt_t * alpha
        cur = lam * dt_t
        Se = alpha * Se + prev * (vp[:, None] * kpe[None, :]) + cur * (vt[:, None] * ke[None, :])
        So = alpha * So + prev * (vp[:, None] * kpo[None, :]) + cur * (vt[:, None] * ko[None, :])
        y = tl.sum(tl.where(sm, Se * qe[None, :] + So * qo[None, :], 0.0), axis=1)
        if HAS_D:
            y = y + d_h * vt
        if HAS_Z:
            y = y * silu(tl.load(z + v_row + cv, mask=vm, other=0.0).to(tl.float32))
        tl.store(out + v_row + cv, y.to(out.dtype.element_ty), mask=vm)
        kpe, kpo, vp = ke, ko, vt
    tl.store(ST + soff, Se.to(ST.dtype.element_ty), mask=sm)
    tl.store(ST + soff + 1, So.to(ST.dtype.element_ty), mask=sm)
    if i_v == 0:
        tl.store(thetaT + bh * A + j, theta.to(thetaT.dtype.element_ty), mask=am)
        tl.store(kT + bh * K + 2 * j, kpe.to(kT.dtype.element_ty), mask=jm)
        tl.store(kT + bh * K + 2 * j + 1, kpo.to(kT.dtype.element_ty), mask=jm)
    tl.store(vT + bh * V + cv, vp.to(vT.dtype.element_ty), mask=vm)


def pair_block(K: int) -> int:
    """BK2: all K / 2 key pairs, at least 16 (a dot's minimum, forward.py)."""
    return max(16, triton.next_power_of_2(K // 2))


def recurrent_forward(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, states,
                      out, final, when: torch.Tensor | None = None, block_v: int = 32,
                      num_warps: int = 4) -> None:
    """Writes out [B, T, H, V] and the final states `final` (reference.States' four
    tensors) from contiguous inputs; `states` the initial ones. when: the one-element int32
    device flag that gates the launch (None: always run)."""
    B, T, _, K = q.shape
    H, V = v.shape[2], v.shape[3]
    A = angles.shape[-1]
    BV = min(block_v, max(16, triton.next_power_of_2(V)))
    recurrent_fwd_kernel[(triton.cdiv(V, BV), H, B)](
        q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, *states, out, *final,
        when, T, H, H // q.shape[2], K, V, A, BK2=pair_block(K), BV=BV,
        HAS_D=D is not None, HAS_Z=z is not None, GATED=when is not None, num_warps=num_warps)
