"""Token-by-token Mamba-3 SISO (reference.py's operations, one token after another): the
decode step (a sequence of one token) and the chunked kernels' non-finite fallback, forward
(forward.py) and backward (backward.py).

The chunked products are exact only for finite values (a NaN at token s reaches rows r < s
through the masked zeros of P times v_s, and its gradients likewise). These kernels form only
the products the sequential recurrence forms, so their NaN and Inf masks are the reference's,
element for element, forward and backward.

Forward (recurrent_fwd_kernel): each program holds one head's [BV, K] slice of the state in
registers, as its two halves of key pairs (columns 2j and 2j + 1), in fp32, and walks its
sequence's tokens. Per token it forms the reference's own operations in the reference's
association: the phase in fp64, the rotations, S = alpha S + ((1 - lam) dt alpha) v_prev
k_prev^T + (lam dt) v k^T, then y = S q (a reduction over K) + D v and out = y silu(z). The
angle, key and value states are written by the V-blocks' first program.

Backward (recurrent_bwd_kernel): the derivatives autograd takes of those operations, product
for product. Per token t, with dS, dP_next and dtheta the gradients of S_t, v_t k'_t^T and
theta_t arriving from later tokens (at the last: the final states' cotangents, those of the
key and value states added to dk' and dv):

    out = y silu(z):    dy = dout silu(z),  dz = silu_backward(dout y, z)
    y = S q' + D v:     dS += dy q'^T,  dq' = S^T dy,  dD += dy . v,  dv += dy D
    S = alpha S_prev + prev v_prev k'_prev^T + cur v k'^T,  prev = ((1 - lam) dt) alpha,
                        cur = lam dt:
        d cur = <dS, v k'^T>,  d prev = <dS, v_prev k'_prev^T>
        dP = dS cur + dP_next (v k'^T's gradient from both steps that read it, summed before
                 its contractions, as autograd accumulates it),  dv += dP k',  dk' += dP^T v
        dP_next = dS prev (carried to token t - 1; at token 0 it is v0 k0^T's, which gives
                 the initial states' gradients)
        d alpha = <dS, S_prev> + d prev ((1 - lam) dt),  dS_prev = dS alpha
        d lam = d cur dt - (d prev alpha) dt,  d dt = d cur lam + (d prev alpha) (1 - lam)
        dtrap = d lam (1 - lam) lam,  dadt = d alpha alpha
    x' = R(theta) x, x = q + q_bias or k + k_bias (turned pairs; the others pass through):
        dx_0 = d_0 cos + d_1 sin,  dx_1 = -d_0 sin + d_1 cos,
        dtheta += (d_0 x_0 + d_1 x_1)(-sin) + (-d_0 x_1 + d_1 x_0) cos
    theta = (theta_prev + (pi tanh(angles)) dt) mod 2 pi (the mod passes gradients through):
        dtheta_prev = dtheta,  dangles = ((dtheta dt) pi)(1 - tanh^2),
        d dt += sum dtheta (pi tanh(angles))

Products are fp32, as the reference's; every contraction is accumulated in fp64 over the real
rows and columns only (ops.masked_sum) and rounded once. One program per (head, sequence), all
of V, so the sums over V (dq', dk', the gates) finish in the program. It needs S_{t-1} at every
token in reverse: a forward walk stores the state entering each chunk of BT tokens (ckpt), and
each chunk is replayed from it into a per-program scratch of BT states (slots) before it is
walked backwards, as kernels/gdn/recurrent.py does.

Both kernels can be gated by a one-element int32 flag on the device (`when`): each program
reads it first and returns at once where it is 0 (the chunked results were finite).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kdiff.kernels.gdn.host import value_block
from kdiff.kernels.mamba3.ops import (
    PI,
    advance_phase,
    head_tile,
    load_halves,
    load_state_rows,
    masked_sum,
    sigmoid,
    silu,
    store_state_rows,
    tanh64,
    turn,
)
from kdiff.kernels.mamba3.reference import States


@triton.jit
def _store_halves(ptr, off, j, mask, first, second):
    tl.store(ptr + off + 2 * j, first.to(ptr.dtype.element_ty), mask=mask)
    tl.store(ptr + off + 2 * j + 1, second.to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gates(adt, dt, trap, g):
    """dt_t, lam_t = sigmoid(trap_t) and alpha_t = exp(adt_t), fp32, at offset g of [B, H, T]."""
    return (tl.load(dt + g).to(tl.float32), sigmoid(tl.load(trap + g).to(tl.float32)),
            tl.exp(tl.load(adt + g).to(tl.float32)))


@triton.jit
def _turned(x, off, be, bo, cos, sin, j, mask, turned):
    """x's [K] row at `off` plus the bias halves (be, bo), and that row turned: (x_0, x_1,
    x'_0, x'_1) as halves of key pairs."""
    x0, x1 = load_halves(x, off, j, mask)
    x0 = x0 + be
    x1 = x1 + bo
    t0, t1 = turn(x0, x1, cos, sin, turned)
    return x0, x1, t0, t1


@triton.jit
def _state_step(Se, So, alpha, prev, cur, vp, kpe, kpo, vt, ke, ko):
    """alpha S + prev v_prev k'_prev^T + cur v k'^T on both halves, the reference's
    association."""
    Se = alpha * Se + prev * (vp[:, None] * kpe[None, :]) + cur * (vt[:, None] * ke[None, :])
    So = alpha * So + prev * (vp[:, None] * kpo[None, :]) + cur * (vt[:, None] * ko[None, :])
    return Se, So


@triton.jit
def _readout(Se, So, qe, qo, sm):
    """S q' per value row (a sum over K)."""
    return tl.sum(tl.where(sm, Se * qe[None, :] + So * qo[None, :], 0.0), axis=1)


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
    # not `_`: the loop below binds `_`, and Triton keeps a name bound before a loop at one type
    bh, hq, Hq, j, jm, am, cv, vm, sm, _soff = head_tile(b, h, i_v, H, G, K, V, A, BK2, BV)
    Se, So = load_state_rows(S0, bh, cv, vm, V, K, BK2)
    theta = tl.load(theta0 + bh * A + j, mask=am, other=0.0).to(tl.float64)
    kpe, kpo = load_halves(k0, bh * K, j, jm)
    vp = tl.load(v0 + bh * V + cv, mask=vm, other=0.0).to(tl.float32)
    qbe, qbo = load_halves(q_bias, h * K, j, jm)
    kbe, kbo = load_halves(k_bias, h * K, j, jm)
    if HAS_D:
        d_h = tl.load(D + h).to(tl.float32)
    for t in range(T):
        row = b.to(tl.int64) * T + t
        qk_row = (row * Hq + hq) * K
        v_row = (row * H + h) * V
        dt_t, lam, alpha = _gates(adt, dt, trap, bh * T + t)
        ang = tl.load(angles + (row * H + h) * A + j, mask=am, other=0.0)
        theta = tl.where(am, advance_phase(theta, ang, dt_t), theta)
        cos = tl.cos(theta).to(tl.float32)
        sin = tl.sin(theta).to(tl.float32)
        _, _, qe, qo = _turned(q, qk_row, qbe, qbo, cos, sin, j, jm, am)
        _, _, ke, ko = _turned(k, qk_row, kbe, kbo, cos, sin, j, jm, am)
        vt = tl.load(v + v_row + cv, mask=vm, other=0.0).to(tl.float32)
        Se, So = _state_step(Se, So, alpha, (1 - lam) * dt_t * alpha, lam * dt_t, vp, kpe, kpo,
                             vt, ke, ko)
        y = _readout(Se, So, qe, qo, sm)
        if HAS_D:
            y = y + d_h * vt
        if HAS_Z:
            y = y * silu(tl.load(z + v_row + cv, mask=vm, other=0.0).to(tl.float32))
        tl.store(out + v_row + cv, y.to(out.dtype.element_ty), mask=vm)
        kpe, kpo, vp = ke, ko, vt
    store_state_rows(ST, bh, cv, vm, V, K, Se, So)
    if i_v == 0:
        tl.store(thetaT + bh * A + j, theta.to(thetaT.dtype.element_ty), mask=am)
        _store_halves(kT, bh * K, j, jm, kpe, kpo)
    tl.store(vT + bh * V + cv, vp.to(vT.dtype.element_ty), mask=vm)


@triton.jit
def _key_value(k, v, phase, row, kbe, kbo, H, h, Hq, hq, K, V, A, j, jm, am, cv, vm):
    """Token `row` (b T + t): the cos and sin of its stored phases, its key with the bias
    (halves) and turned, and its value."""
    theta = tl.load(phase + (row * H + h) * A + j, mask=am, other=0.0)
    cos = tl.cos(theta).to(tl.float32)
    sin = tl.sin(theta).to(tl.float32)
    xke, xko, ke, ko = _turned(k, (row * Hq + hq) * K, kbe, kbo, cos, sin, j, jm, am)
    vt = tl.load(v + (row * H + h) * V + cv, mask=vm, other=0.0).to(tl.float32)
    return cos, sin, xke, xko, ke, ko, vt


@triton.jit
def _previous(k, v, k0, v0, phase, t, b, bh, kbe, kbo, T, H, h, Hq, hq, K, V, A, j, jm, am, cv,
              vm):
    """k'_{t-1} (halves) and v_{t-1}: token t - 1's, or the carried-in states at t = 0."""
    first_row = b.to(tl.int64) * T
    row = first_row + t
    # at t = 0, token 0 is read and dropped: a row in the sequence, no mask needed
    _, _, _, _, ke, ko, vt = _key_value(k, v, phase, tl.maximum(row - 1, first_row), kbe, kbo,
                                        H, h, Hq, hq, K, V, A, j, jm, am, cv, vm)
    ie, io = load_halves(k0, bh * K, j, jm)
    iv = tl.load(v0 + bh * V + cv, mask=vm, other=0.0).to(tl.float32)
    first = row == first_row
    return tl.where(first, ie, ke), tl.where(first, io, ko), tl.where(first, iv, vt)


@triton.jit
def _walk(Se, So, start, n, slots, local, tile, k, v, k0, v0, adt, dt, trap, phase, b, bh,
          kbe, kbo, T, H, h, Hq, hq, K, V, A, j, jm, am, cv, vm, STORE: tl.constexpr):
    """The state entering token `start` stepped through n tokens; STORE: the state entering
    the i-th into slots (both halves, [2, BV, BK2] a token)."""
    kpe, kpo, vp = _previous(k, v, k0, v0, phase, start, b, bh, kbe, kbo, T, H, h, Hq, hq, K,
                             V, A, j, jm, am, cv, vm)
    for i in range(n):
        if STORE:
            tl.store(slots + 2 * i * tile + local, Se)
            tl.store(slots + (2 * i + 1) * tile + local, So)
        t = start + i
        _, _, _, _, ke, ko, vt = _key_value(k, v, phase, b.to(tl.int64) * T + t, kbe, kbo, H, h,
                                            Hq, hq, K, V, A, j, jm, am, cv, vm)
        dt_t, lam, alpha = _gates(adt, dt, trap, bh * T + t)
        Se, So = _state_step(Se, So, alpha, (1 - lam) * dt_t * alpha, lam * dt_t, vp, kpe, kpo,
                             vt, ke, ko)
        kpe, kpo, vp = ke, ko, vt
    return Se, So


@triton.jit
def _inner(ae, ao, be, bo, sm):
    """<a, b> over the whole [V, K] state given as halves: fp64, rounded once to fp32."""
    return tl.sum(masked_sum(ae * be, sm, 1) + masked_sum(ao * bo, sm, 1), 0).to(tl.float32)


@triton.jit
def _pair_back(dPe, dPo, vt, ke, ko, sm):
    """Through v k'^T: the gradients of v and of k' (halves), given the product's (halves)."""
    dv = (masked_sum(dPe * ke[None, :], sm, 1) + masked_sum(dPo * ko[None, :], sm, 1))
    return (dv.to(tl.float32), masked_sum(dPe * vt[:, None], sm, 0).to(tl.float32),
            masked_sum(dPo * vt[:, None], sm, 0).to(tl.float32))


@triton.jit
def _turn_back(d0, d1, x0, x1, cos, sin, turned):
    """Through x' = R(theta) x (ops.turn): the gradients of x (halves) and of theta, given
    those of x' (d0, d1), as autograd forms them from reference.rotate."""
    dx0 = tl.where(turned, d0 * cos + d1 * sin, d0)
    dx1 = tl.where(turned, -d0 * sin + d1 * cos, d1)
    dtheta = (d0 * x0 + d1 * x1) * -sin + (-d0 * x1 + d1 * x0) * cos
    return dx0, dx1, tl.where(turned, dtheta, 0.0)


@triton.jit
def recurrent_bwd_kernel(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z,
                         k0, v0, phase, dout, dthetaT, dST, dkT, dvT, ckpt, slots,
                         dq, dk, dv, dz, dadt, ddt, dtrap, dangles, dD, dtheta0, dS0, dk0, dv0,
                         S0, when, T, H, G, K, V, A,
                         BT: tl.constexpr, BK2: tl.constexpr, BV: tl.constexpr,
                         HAS_D: tl.constexpr, HAS_Z: tl.constexpr, GATED: tl.constexpr):
    """Grid (H, B), all of V (BV >= V). Inputs as recurrent_fwd_kernel's, with the initial
    states S0, k0, v0, the phases [B, T, H, A] fp64 (forward.rotate_fwd_kernel's: the
    reference's angles up to rounding, NaN from the same token on) and the cotangents of out
    and the four final states.
    ckpt [B * H, chunks, 2, BV, BK2] and slots [B * H, BT, 2, BV, BK2] fp32 scratch. Writes the
    fp32 gradients of backward.HeadGradients. GATED: nothing unless when[0] != 0."""
    if GATED:
        if tl.load(when) == 0:
            return
    h, b = tl.program_id(0), tl.program_id(1)
    bh, hq, Hq, j, jm, am, cv, vm, sm, soff = head_tile(b, h, 0, H, G, K, V, A, BK2, BV)
    tile = BV * BK2
    local = cv[:, None] * BK2 + j[None, :]
    NC = tl.cdiv(T, BT)
    ckpt += bh * NC * 2 * tile
    slots += bh * BT * 2 * tile
    qbe, qbo = load_halves(q_bias, h * K, j, jm)
    kbe, kbo = load_halves(k_bias, h * K, j, jm)
    if HAS_D:
        d_h = tl.load(D + h).to(tl.float32)
    Se = tl.load(S0 + soff, mask=sm, other=0.0).to(tl.float32)
    So = tl.load(S0 + soff + 1, mask=sm, other=0.0).to(tl.float32)
    for c in range(NC):  # the state entering each chunk
        tl.store(ckpt + 2 * c * tile + local, Se)
        tl.store(ckpt + (2 * c + 1) * tile + local, So)
        Se, So = _walk(Se, So, c * BT, tl.minimum(BT, T - c * BT), slots, local, tile, k, v, k0,
                       v0, adt, dt, trap, phase, b, bh, kbe, kbo, T, H, h, Hq, hq, K, V, A, j,
                       jm, am, cv, vm, False)
    dSe = tl.load(dST + soff, mask=sm, other=0.0).to(tl.float32)
    dSo = tl.load(dST + soff + 1, mask=sm, other=0.0).to(tl.float32)
    # dS_{t+1} prev_{t+1}: the gradient of v_t k'_t^T that token t + 1's step sends back
    dPne = tl.zeros([BV, BK2], dtype=tl.float32)
    dPno = tl.zeros([BV, BK2], dtype=tl.float32)
    # the final key and value states' cotangents, which reach the last token's dk' and dv
    dkTe, dkTo = load_halves(dkT, bh * K, j, jm)
    dvTv = tl.load(dvT + bh * V + cv, mask=vm, other=0.0).to(tl.float32)
    dth = tl.load(dthetaT + bh * A + j, mask=am, other=0.0).to(tl.float32)
    dD_acc = tl.zeros([BV], dtype=tl.float64)
    tl.debug_barrier()  # the checkpoints are read back by other threads
    for i in range(NC):
        c = NC - 1 - i
        start = c * BT
        n = tl.minimum(BT, T - start)
        _walk(tl.load(ckpt + 2 * c * tile + local), tl.load(ckpt + (2 * c + 1) * tile + local),
              start, n, slots, local, tile, k, v, k0, v0, adt, dt, trap, phase, b, bh, kbe, kbo,
              T, H, h, Hq, hq, K, V, A, j, jm, am, cv, vm, True)
        tl.debug_barrier()  # the replayed states are read back by other threads
        for i_t in range(n):
            s = n - 1 - i_t
            t = start + s
            row = b.to(tl.int64) * T + t
            g = bh * T + t
            v_row = (row * H + h) * V + cv
            cos, sin, xke, xko, ke, ko, vt = _key_value(k, v, phase, row, kbe, kbo, H, h, Hq, hq,
                                                        K, V, A, j, jm, am, cv, vm)
            xqe, xqo, qe, qo = _turned(q, (row * Hq + hq) * K, qbe, qbo, cos, sin, j, jm, am)
            dt_t, lam, alpha = _gates(adt, dt, trap, g)
            a2 = (1 - lam) * dt_t
            prev = a2 * alpha
            cur = lam * dt_t
            kpe, kpo, vp = _previous(k, v, k0, v0, phase, t, b, bh, kbe, kbo, T, H, h, Hq, hq,
                                     K, V, A, j, jm, am, cv, vm)
            Spe = tl.load(slots + 2 * s * tile + local)
            Spo = tl.load(slots + (2 * s + 1) * tile + local)
            Se, So = _state_step(Spe, Spo, alpha, prev, cur, vp, kpe, kpo, vt, ke, ko)
            # out = y silu(z), y = S q' + D v
            dy = tl.load(dout + v_row, mask=vm, other=0.0).to(tl.float32)
            last = t == T - 1
            dvt = tl.where(last, dvTv, 0.0)
            if HAS_Z:
                y = _readout(Se, So, qe, qo, sm)
                if HAS_D:
                    y = y + d_h * vt
                zt = tl.load(z + v_row, mask=vm, other=0.0).to(tl.float32)
                sz = sigmoid(zt)
                tl.store(dz + v_row, dy * y * sz * (1 + zt * (1 - sz)), mask=vm)
                dy = dy * silu(zt)
            if HAS_D:
                dD_acc += tl.where(vm, dy * vt, 0.0).to(tl.float64)
                dvt = dvt + dy * d_h
            dSe = dSe + dy[:, None] * qe[None, :]
            dSo = dSo + dy[:, None] * qo[None, :]
            dqe = masked_sum(Se * dy[:, None], sm, 0).to(tl.float32)
            dqo = masked_sum(So * dy[:, None], sm, 0).to(tl.float32)
            # S = alpha S_prev + prev v_prev k'_prev^T + cur v k'^T
            d_cur = _inner(dSe, dSo, vt[:, None] * ke[None, :], vt[:, None] * ko[None, :], sm)
            # v k'^T's gradient, both steps' terms summed before its contractions, as autograd
            # accumulates it: terms of either sign times an infinite k' or v then give the
            # reference's +-Inf, not Inf - Inf
            dv_pair, dke_pair, dko_pair = _pair_back(dSe * cur + dPne, dSo * cur + dPno, vt,
                                                     ke, ko, sm)
            dvt += dv_pair
            dke = tl.where(last, dkTe, 0.0) + dke_pair
            dko = tl.where(last, dkTo, 0.0) + dko_pair
            d_prev = _inner(dSe, dSo, vp[:, None] * kpe[None, :], vp[:, None] * kpo[None, :], sm)
            dPne = dSe * prev
            dPno = dSo * prev
            d_a2 = d_prev * alpha
            d_alpha = d_prev * a2 + _inner(dSe, dSo, Spe, Spo, sm)
            d_lam = d_cur * dt_t - d_a2 * dt_t
            d_dt = d_cur * lam + d_a2 * (1 - lam)
            dSe = dSe * alpha
            dSo = dSo * alpha
            # the rotations and the phase
            dxqe, dxqo, dth_q = _turn_back(dqe, dqo, xqe, xqo, cos, sin, am)
            dxke, dxko, dth_k = _turn_back(dke, dko, xke, xko, cos, sin, am)
            dth = dth + dth_q + dth_k
            offs = (row * H + h) * A + j
            tnh = tanh64(tl.load(angles + offs, mask=am, other=0.0)).to(tl.float32)
            d_dt += masked_sum(dth * (PI * tnh), am, 0).to(tl.float32)
            tl.store(dangles + offs, dth * dt_t * PI * (1 - tnh * tnh), mask=am)
            _store_halves(dq, (row * H + h) * K, j, jm, dxqe, dxqo)
            _store_halves(dk, (row * H + h) * K, j, jm, dxke, dxko)
            tl.store(dv + v_row, dvt, mask=vm)
            tl.store(dadt + g, d_alpha * alpha)
            tl.store(ddt + g, d_dt)
            tl.store(dtrap + g, d_lam * (1 - lam) * lam)
        tl.debug_barrier()  # the next chunk's replay overwrites the slots
    tl.store(dS0 + soff, dSe, mask=sm)
    tl.store(dS0 + soff + 1, dSo, mask=sm)
    # token 0's previous pair is the initial states' v0 k0^T
    ie, io = load_halves(k0, bh * K, j, jm)
    dv_pair, dke_pair, dko_pair = _pair_back(
        dPne, dPno, tl.load(v0 + bh * V + cv, mask=vm, other=0.0).to(tl.float32), ie, io, sm)
    _store_halves(dk0, bh * K, j, jm, dke_pair, dko_pair)
    tl.store(dv0 + bh * V + cv, dv_pair, mask=vm)
    tl.store(dtheta0 + bh * A + j, dth, mask=am)
    tl.store(dD + bh, tl.sum(dD_acc, 0).to(tl.float32))


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
    BV = value_block(V, block_v)
    recurrent_fwd_kernel[(triton.cdiv(V, BV), H, B)](
        q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, *states, out, *final,
        when, T, H, H // q.shape[2], K, V, A, BK2=pair_block(K), BV=BV,
        HAS_D=D is not None, HAS_Z=z is not None, GATED=when is not None, num_warps=num_warps)


# sm_90 at K = 128, V = 64 the backward's program holds about a dozen [64, 64] fp32 tiles (the
# state, its gradient, the replayed S_{t-1} and the products): 8 warps spread them over 256
# threads. A fallback: its spills cost only the calls that take it.
WARPS_BACKWARD = 8


def recurrent_backward(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, states: States,
                       phase: torch.Tensor, cotangents, grads, chunk_size: int,
                       when: torch.Tensor | None = None) -> None:
    """Overwrites grads (backward.HeadGradients' tensors) with the token-by-token
    gradients; with `when` (recurrent_forward's), only where it holds a non-zero value.
    cotangents: of out and of the four final states, as reference.States; phase: the
    forward's [B, T, H, A] fp64 phases. The replay's scratch is allocated on every call, used
    or not (deciding on the host would cost a sync): the states entering each chunk and each
    program's chunk_size replayed states, [B * H, chunks + chunk_size, V, K] fp32 together
    (1.6 GB at the paper's (16, 2048, 32 heads), K = 128, V = 64, chunks of 64)."""
    B, T, _, K = q.shape
    H, V = v.shape[2], v.shape[3]
    BK2, BV = pair_block(K), max(16, triton.next_power_of_2(V))
    state = 2 * BV * BK2
    f32 = dict(dtype=torch.float32, device=q.device)
    ckpt = torch.empty(B * H * triton.cdiv(T, chunk_size) * state, **f32)
    slots = torch.empty(B * H * chunk_size * state, **f32)
    recurrent_bwd_kernel[(H, B)](
        q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, states.k, states.v, phase,
        *cotangents, ckpt, slots, *grads, states.ssm, when, T, H, H // q.shape[2], K, V,
        angles.shape[-1], BT=chunk_size, BK2=BK2, BV=BV, HAS_D=D is not None,
        HAS_Z=z is not None, GATED=when is not None, num_warps=WARPS_BACKWARD)
