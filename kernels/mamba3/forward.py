"""Chunked Mamba-3 SISO forward (chunked.py's algorithm) in three Triton kernels, and the
decode step; each with its host wrapper.

phase_fwd_kernel forms the phases (fp64, reduced mod 2 pi at every token as the reference's),
as running sums over blocks of tokens where every turn is within pi, else token by token.
rotate_fwd_kernel, one program per (chunk, head, sequence), forms the rotated q' and k' (cos,
sin of the stored phases, the biases added), rounded to the working dtype as the products
that read them would. chunk_fwd_kernel, one program per (V-block, head, sequence), walks the
sequence's chunks of BT tokens, holding the [BV, K] state (fp32, as its two halves of key
pairs) across chunks. Per chunk: the chunk-local log-decay sums la (fp64: exp(la_r - la_s)
subtracts them before an fp32 exp, as kernels/gdn's gc), P = (Q' K'^T) * decay * weight
(lower triangle), y = exp(la) Q' S^T + P V, D v and silu(z), and the state step
S <- exp(la_last) S + (V * w)^T K'.

Non-finite values: the chunked products are exact only for finite values (a NaN at token s
reaches rows r < s through the masked zeros of P times v_s). As kernels/gdn's forward, each
call checks its results on the device (gdn.fallback.fallback_flag) and launches the
token-by-token kernel (recurrent.py) gated by that flag: it returns at once on finite results
and otherwise rewrites all of them with the reference's own operations.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import triton
import triton.language as tl

from kdiff.kernels.gdn.fallback import fallback_flag
from kdiff.kernels.gdn.tile_ops import mm
from kdiff.kernels.mamba3.ops import (
    cos_sin,
    load_halves,
    mod_two_pi,
    pair_offsets,
    phase_step,
    sigmoid,
    silu,
    state_tile,
    turn,
)
from kdiff.kernels.mamba3.recurrent import pair_block, recurrent_forward
from kdiff.kernels.mamba3.reference import States

# Warps and pipeline stages of the chunk kernels (chunk_fwd_kernel: "forward", backward.py's
# chunk_bwd_kernel: "backward"), by working dtype: "fp32" or "low" (bf16, fp16). Read at each
# launch, so a caller may set them before its first (kernels/tune_examples/mamba3_tunable.py).
# fp32 (IEEE products on the FMA units): 8 warps and one stage; with 4 warps and the default 3
# stages chunk_fwd_kernel at K = 128, V = 64, C = 64 needed 267 kB of shared memory on sm_90
# (Triton 3.9, compiled here), over its 227 kB, and 82 kB with these. Both kernels hold
# [C, K/2] and [V, K/2] fp32 tiles that do not fit 4 warps' registers: on sm_90
# (benchmarks/mamba3_compile_sweep.py, C = 64, BV = 64) bf16 chunk_fwd_kernel spills 1.7 kB at
# 4 warps and 0.66 kB at 8; chunk_bwd_kernel 7.5 kB at 4 warps, 2 stages and 4.0 kB at 8
# warps, 1 stage (a second stage only adds shared memory and spills). Timed whole, the bf16
# forward at 16 x 2048 (C 64, one stage) still ran faster at 4 warps than at 8: 3.56 against
# 3.98 ms on the H200, 3.63 against 4.07 ms on an H100 (mamba3_profile.py --parts
# forward_sweep; NOTES.md). The backward keeps 8 warps until the forward + backward is timed.
WARPS = {"forward": {"fp32": 8, "low": 4}, "backward": {"fp32": 8, "low": 8}}
STAGES = {"forward": {"fp32": 1, "low": 1}, "backward": {"fp32": 1, "low": 1}}


def launch(kernel: str, dtype: torch.dtype) -> dict:
    """The launch options of chunk kernel `kernel` ("forward" or "backward") in `dtype`."""
    key = "fp32" if dtype == torch.float32 else "low"
    return {"num_warps": WARPS[kernel][key], "num_stages": STAGES[kernel][key]}


# phase_fwd_kernel's running sums: blocks of PHASE_BLOCK tokens (a [PHASE_BLOCK, A <= 64]
# fp64 tile; the rounding bound in _phase_sums grows with the block) on PHASE_WARPS warps.
# rotate_fwd_kernel: ROTATE_ROWS rows a program on ROTATE_WARPS warps; elementwise, so no
# setting changes a bit of its result. The bf16 forward at 16 x 2048, timed whole with one
# setting changed at a time from a phase block of 64 on 4 warps and rotation rows of 64 on 8
# warps, on an H100 (mamba3_profile.py --parts phase_rotation_sweep, 2026-12-05): 3.50 ms as
# set; rotation rows 8: 2.59 ms, 16: 2.78, 32: 3.38; phase block 16: 3.31 ms, 32: 3.47, 128:
# 3.77; phase warps 1: 5.65 ms, 2: 4.11, 8: 3.59; rotation warps 4: 3.43 ms, 1 and 2: 8.2 and
# 10.3. At 64 rows the rotation held 181 registers a thread (Triton 3.6, sm_90): one program
# of 8 warps an SM. The rows are set from that call; the phase block stays at 64, the block
# its gates were judged at on the GPU.
PHASE_BLOCK, PHASE_WARPS = 64, 4
ROTATE_ROWS, ROTATE_WARPS = 8, 8

# The largest key head dimension: the kernel holds [BT, K / 2] tiles of q' and k' (two
# halves each) and the [BV, K] state; Mamba-3's d_state is 128 (NOTES.md), and at 256 the
# fp32 tiles already take 4 x 64 x 128 x 4 B = 128 KiB of registers per program at BT = 64.
MAX_HEAD_DIM_K = 256


@triton.jit
def _pairs(ptr, row_base, j, mask):
    """The two halves (elements 2j and 2j + 1) of [rows, K] rows starting at row_base."""
    first = tl.load(ptr + row_base + 2 * j[None, :], mask=mask, other=0.0).to(tl.float32)
    second = tl.load(ptr + row_base + 2 * j[None, :] + 1, mask=mask, other=0.0).to(tl.float32)
    return first, second


@triton.jit
def chunk_gates(adt, dt, trap, c, b, bh, T, BT: tl.constexpr):
    """Chunk c's rows: t (token indices), rm (t < T), g (offsets into [B, H, T]), rows
    (b T + t), and its trapezoid weights gamma = lam dt and scale = gamma + (1 - lam_next)
    dt_next (fp32), and the chunk-local log-decay cumsum la with its last entry (fp64)."""
    r = tl.arange(0, BT)
    t = c * BT + r
    rm = t < T
    nm = t + 1 < T
    g = bh * T + t
    dt_r = tl.load(dt + g, mask=rm, other=0.0).to(tl.float32)
    lam = sigmoid(tl.load(trap + g, mask=rm, other=0.0).to(tl.float32))
    dt_n = tl.load(dt + g + 1, mask=nm, other=0.0).to(tl.float32)
    lam_n = sigmoid(tl.load(trap + g + 1, mask=nm, other=0.0).to(tl.float32))
    gamma = lam * dt_r
    scale = gamma + (1 - lam_n) * dt_n
    la = tl.cumsum(tl.load(adt + g, mask=rm, other=0.0).to(tl.float64), 0)
    la_last = tl.sum(tl.where(r == BT - 1, la, 0.0), 0)
    return t, rm, g, b.to(tl.int64) * T + t, gamma, scale, la, la_last


@triton.jit
def chunk_keys(q, k, phase, rows, rm, H, h, Hq, hq, K, A, j, jm, am, qbe, qbo, kbe, kbo):
    """The rows' phases as (cos, sin) [rows, pairs] and their rotated q' and k' with the
    biases, each as its two halves of key pairs (fp32)."""
    th = tl.load(phase + (rows[:, None] * H + h) * A + j[None, :],
                 mask=rm[:, None] & am[None, :], other=0.0)
    # cos and sin within 2u absolute (ops.cos_sin). Through a rotation (norm-preserving)
    # that is at most 2 sqrt 2 u ~ 3 roundings of the pair's norm, against the test
    # module's error model: it counts K + V + 4C roundings per chunk where the longest path
    # forms K + 2C + 10 (rotation 3, q'.k' K, P's 3, P V C, the state step C + 1, D v and
    # silu 3), a slack of V + 2C - 10 >= 46 at every tested size, so N stands.
    cos, sin = cos_sin(th)
    qk_base = ((rows * Hq + hq) * K)[:, None]
    pm = rm[:, None] & jm[None, :]
    q0, q1 = _pairs(q, qk_base, j, pm)
    qe, qo = turn(q0 + qbe[None, :], q1 + qbo[None, :], cos, sin, am[None, :])
    k0, k1 = _pairs(k, qk_base, j, pm)
    ke, ko = turn(k0 + kbe[None, :], k1 + kbo[None, :], cos, sin, am[None, :])
    return cos, sin, qe, qo, ke, ko


@triton.jit
def _phase_sums(angles, dt, phase, theta, first, bh, T, H, h, A, a, am, BP: tl.constexpr):
    """Tokens 1.. of phase_fwd_kernel from token 0's phase `theta`, where every dt is within
    [-1, 1] (every turn pi tanh(angles_t) dt_t within pi): per block of BP tokens, the turns'
    running sum (fp64) on the phase entering the block, reduced once per token with the
    exact fmod, the block's last phase carried to the next. A sum of at most 2 pi + BP pi
    rounds by at most u64 (2 pi + BP pi) an addition: at BP = 64 that is 2.3e-14 a token,
    a millionth of an fp32 rounding of the phase. The reduction is discontinuous at 0 =
    2 pi, where a token-by-token walk and a sum may land on either side: the same angle,
    and the cosines and sines that read it are continuous there (the angle state is a
    periodic output, judged around the circle: problems.py). The walk token by token was a
    dependent chain of two fp64 operations and a reduction per token; here a block's turns,
    sums and reductions are independent but for the carry."""
    p = tl.arange(0, BP)
    for t0 in range(1, T, BP):
        rows = t0 + p
        m = rows < T
        turns = phase_step(tl.load(angles + ((first + rows[:, None]) * H + h) * A + a[None, :],
                                   mask=m[:, None] & am[None, :], other=0.0),
                           tl.load(dt + bh * T + rows, mask=m, other=0.0)[:, None])
        block = mod_two_pi(theta[None, :] + tl.cumsum(turns, 0))
        tl.store(phase + ((first + rows[:, None]) * H + h) * A + a[None, :], block,
                 mask=m[:, None] & am[None, :])
        last = tl.minimum(T - t0, BP) - 1
        theta = tl.sum(tl.where(p[:, None] == last, block, -0.0), 0)
    return theta


@triton.jit
def _phase_walk(angles, dt, phase, theta, first, bh, T, H, h, A, a, am, BP: tl.constexpr):
    """Tokens 1.. of phase_fwd_kernel's walk from token 0's phase `theta`, token by token as
    the reference: each (theta + turn) reduced with the exact fmod, where a turn may be of
    any size (a dt outside [-1, 1]; the sum of two turns of 1e30 keeps neither's phase).
    A block's turns are formed at once, from loads issued a block earlier, and token i's is
    taken out of the block as a sum with -0.0 everywhere else, exactly the turn (x + -0.0 =
    x, signed zeros included)."""
    p = tl.arange(0, BP)
    rows = 1 + p
    ang = tl.load(angles + ((first + rows[:, None]) * H + h) * A + a[None, :],
                  mask=(rows < T)[:, None] & am[None, :], other=0.0)
    d = tl.load(dt + bh * T + rows, mask=rows < T, other=0.0)
    for t0 in range(1, T, BP):
        turns = phase_step(ang, d[:, None])
        ahead = t0 + BP + p
        ang = tl.load(angles + ((first + ahead[:, None]) * H + h) * A + a[None, :],
                      mask=(ahead < T)[:, None] & am[None, :], other=0.0)
        d = tl.load(dt + bh * T + ahead, mask=ahead < T, other=0.0)
        block = tl.zeros_like(turns)
        for i in tl.static_range(BP):
            turn_i = tl.sum(tl.where(p[:, None] == i, turns, -0.0), 0)
            theta = tl.where(t0 + i < T, mod_two_pi(theta + turn_i), theta)
            block = tl.where(p[:, None] == i, theta[None, :], block)
        rows = t0 + p
        tl.store(phase + ((first + rows[:, None]) * H + h) * A + a[None, :], block,
                 mask=(rows < T)[:, None] & am[None, :])
    return theta


@triton.jit
def phase_fwd_kernel(angles, dt, theta0, phase, thetaT, T, H, A, BA: tl.constexpr,
                     BT: tl.constexpr, BS: tl.constexpr, BP: tl.constexpr):
    """Grid (H, B): the phases theta_t [B, T, H, A] fp64, the reference's (theta + pi
    tanh(angles_t) dt_t) mod 2 pi, and the last into thetaT. Token 0 starts from any initial
    phase, so it takes the exact fmod; every later token starts from a phase in [0, 2 pi].
    Where the sequence's dt keeps every turn within pi (a check over its T values first),
    the phases are running sums over blocks of BS tokens (_phase_sums); otherwise the walk
    goes token by token (_phase_walk), blocks of BP."""
    h, b = tl.program_id(0), tl.program_id(1)
    bh = b.to(tl.int64) * H + h
    a = tl.arange(0, BA)
    am = a < A
    theta = tl.load(theta0 + bh * A + a, mask=am, other=0.0).to(tl.float64)
    first = b.to(tl.int64) * T
    theta = mod_two_pi(theta + phase_step(
        tl.load(angles + (first * H + h) * A + a, mask=am, other=0.0), tl.load(dt + bh * T)))
    tl.store(phase + (first * H + h) * A + a, theta, mask=am)
    large = 0  # dt values outside [-1, 1], NaN among them
    for t0 in range(0, T, BT):
        r = t0 + tl.arange(0, BT)
        d = tl.load(dt + bh * T + r, mask=r < T, other=0.0)
        large += tl.sum(tl.where(tl.abs(d) <= 1.0, 0, 1), 0)
    if large == 0:
        theta = _phase_sums(angles, dt, phase, theta, first, bh, T, H, h, A, a, am, BS)
    else:
        theta = _phase_walk(angles, dt, phase, theta, first, bh, T, H, h, A, a, am, BP)
    tl.store(thetaT + bh * A + a, theta.to(thetaT.dtype.element_ty), mask=am)


@triton.jit
def _halves_offsets(rows, H, h, K, j):
    """Offsets in a [B, T, H, K] tensor of halves (rotate_fwd_kernel's) of rows' pairs j at
    head h: their first elements, then their second."""
    first = ((rows * H + h) * K)[:, None] + j[None, :]
    return first, first + K // 2


@triton.jit
def rotate_fwd_kernel(q, k, phase, q_bias, k_bias, qr, kr, T, H, G, K, A,
                      BT: tl.constexpr, BK2: tl.constexpr):
    """Grid (blocks of BT rows, H, B): chunk_keys' q' and k' of head h, stored in qr's dtype
    as halves ([B, T, H, K]: pair j's turned first element at j, its second at K / 2 + j). Rounding
    them to the working dtype here is the rounding chunk_fwd_kernel's products (mm) apply, so
    its results do not change; the chunk walk, sequential over a sequence, loads the tiles
    instead of forming them (the cosines, the sines and the strided pair loads)."""
    c, h, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    j, jm = pair_offsets(K, BK2)
    am = j < A
    hq = h // G
    qbe, qbo = load_halves(q_bias, h * K, j, jm)
    kbe, kbo = load_halves(k_bias, h * K, j, jm)
    t = c * BT + tl.arange(0, BT)
    rm = t < T
    rows = b.to(tl.int64) * T + t
    _, _, qe, qo, ke, ko = chunk_keys(q, k, phase, rows, rm, H, h, H // G, hq, K, A, j, jm, am,
                                      qbe, qbo, kbe, kbo)
    first, second = _halves_offsets(rows, H, h, K, j)
    pm = rm[:, None] & jm[None, :]
    DT: tl.constexpr = qr.dtype.element_ty
    tl.store(qr + first, qe.to(DT), mask=pm)
    tl.store(qr + second, qo.to(DT), mask=pm)
    tl.store(kr + first, ke.to(DT), mask=pm)
    tl.store(kr + second, ko.to(DT), mask=pm)


@triton.jit
def chunk_fwd_kernel(qr, kr, v, adt, dt, trap, D, z, S0, k0, v0, out, ST, vT, hbuf, ybuf,
                     T, H, K, V,
                     BT: tl.constexpr, BK2: tl.constexpr, BV: tl.constexpr,
                     HAS_D: tl.constexpr, HAS_Z: tl.constexpr, STORE: tl.constexpr):
    """Grid (V-blocks, H, B); tensors as recurrent_fwd_kernel's, T >= 1, with q' and k' as
    rotate_fwd_kernel's halves (qr, kr) in place of q, k, their biases and the phases.
    STORE: what the backward (backward.py) reads: hbuf [B * H, chunks + 1, V, K] fp32, the
    state entering each chunk and the final one; ybuf [B, T, H, V] fp32, y before the gate."""
    i_v, h, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    DT: tl.constexpr = qr.dtype.element_ty
    bh, j, jm, cv, vm, sm, soff = state_tile(b, h, i_v, H, K, V, BK2, BV)
    r = tl.arange(0, BT)
    # S_0 = S_init + ((1 - lam_0) dt_0) v_init k_init^T; alpha_0 comes with the first la
    lam0 = sigmoid(tl.load(trap + bh * T).to(tl.float32))
    prev0 = (1 - lam0) * tl.load(dt + bh * T).to(tl.float32)
    kpe, kpo = load_halves(k0, bh * K, j, jm)
    vp = tl.load(v0 + bh * V + cv, mask=vm, other=0.0).to(tl.float32)
    Se = tl.load(S0 + soff, mask=sm, other=0.0).to(tl.float32) + prev0 * (
        vp[:, None] * kpe[None, :])
    So = tl.load(S0 + soff + 1, mask=sm, other=0.0).to(tl.float32) + prev0 * (
        vp[:, None] * kpo[None, :])
    if HAS_D:
        d_h = tl.load(D + h).to(tl.float32)
    causal = r[None, :] <= r[:, None]
    diagonal = r[None, :] == r[:, None]
    NC = tl.cdiv(T, BT)
    for c in range(0, NC):
        if STORE:
            hoff = (bh * (NC + 1) + c) * V * K + cv[:, None] * K + 2 * j[None, :]
            tl.store(hbuf + hoff, Se, mask=sm)
            tl.store(hbuf + hoff + 1, So, mask=sm)
        t, rm, g, rows, gamma, scale, la, la_last = chunk_gates(adt, dt, trap, c, b, bh, T, BT)
        pm = rm[:, None] & jm[None, :]
        first, second = _halves_offsets(rows, H, h, K, j)
        qe = tl.load(qr + first, mask=pm, other=0.0)
        qo = tl.load(qr + second, mask=pm, other=0.0)
        ke = tl.load(kr + first, mask=pm, other=0.0)
        ko = tl.load(kr + second, mask=pm, other=0.0)
        v_off = ((rows * H + h) * V)[:, None] + cv[None, :]
        tm = rm[:, None] & vm[None, :]
        vt = tl.load(v + v_off, mask=tm, other=0.0).to(tl.float32)
        qk = mm(qe, tl.trans(ke), DT) + mm(qo, tl.trans(ko), DT)
        decay = tl.exp(tl.where(causal, la[:, None] - la[None, :], 0.0).to(tl.float32))
        weight = tl.where(diagonal, gamma[None, :], scale[None, :])
        P = tl.where(causal, qk * decay * weight, 0.0)
        y = (tl.exp(la.to(tl.float32))[:, None]
             * (mm(qe, tl.trans(Se), DT) + mm(qo, tl.trans(So), DT)) + mm(P, vt, DT))
        if HAS_D:
            y = y + d_h * vt
        if STORE:
            tl.store(ybuf + v_off, y, mask=tm)
        if HAS_Z:
            y = y * silu(tl.load(z + v_off, mask=tm, other=0.0).to(tl.float32))
        tl.store(out + v_off, y.to(out.dtype.element_ty), mask=tm)
        wl = tl.exp((la_last - la).to(tl.float32)) * scale
        vw = tl.trans(vt * wl[:, None])
        carry = tl.exp(la_last.to(tl.float32))
        Se = carry * Se + mm(vw, ke, DT)
        So = carry * So + mm(vw, ko, DT)
    tl.store(ST + soff, Se.to(ST.dtype.element_ty), mask=sm)
    tl.store(ST + soff + 1, So.to(ST.dtype.element_ty), mask=sm)
    if STORE:
        hoff = (bh * (NC + 1) + NC) * V * K + cv[:, None] * K + 2 * j[None, :]
        tl.store(hbuf + hoff, Se, mask=sm)
        tl.store(hbuf + hoff + 1, So, mask=sm)
    # the last token's value
    last = b.to(tl.int64) * T + T - 1
    vl = tl.load(v + (last * H + h) * V + cv, mask=vm, other=0.0)
    tl.store(vT + bh * V + cv, vl.to(vT.dtype.element_ty), mask=vm)


def check_shapes(q, k, v, angles, states: States) -> None:
    B, T, Hq, K = q.shape
    H, V, A = v.shape[2], v.shape[3], angles.shape[-1]
    if K % 2 or K > MAX_HEAD_DIM_K:
        raise ValueError(f"the key head dimension must be even and at most {MAX_HEAD_DIM_K}, "
                         f"got {K}")
    if k.shape != q.shape or H % Hq:
        raise ValueError(f"k must be q's shape {list(q.shape)} and its heads divide v's {H}")
    if A > K // 2:
        raise ValueError(f"{A} angles for {K // 2} key pairs")
    wanted = ((B, H, A), (B, H, V, K), (B, H, K), (B, H, V))
    if tuple(tuple(s.shape) for s in states) != wanted:
        raise ValueError(f"states must be {wanted}, got {[list(s.shape) for s in states]}")


def new_states(states: States, dtype: torch.dtype) -> States:
    """Empty final states shaped as `states`, in the working dtype."""
    return States(*(torch.empty_like(s, dtype=dtype) for s in states))


class Saved(NamedTuple):
    """What the chunked forward keeps for the backward: the phases, chunk_fwd_kernel's STORE
    buffers, and its fallback decision (a one-element int32 device flag: the results were
    recomputed token by token, so the buffers are not theirs)."""
    phase: torch.Tensor
    hbuf: torch.Tensor
    ybuf: torch.Tensor
    fallback: torch.Tensor


def launch_phases(angles: torch.Tensor, dt: torch.Tensor, theta0: torch.Tensor,
                  phase: torch.Tensor, thetaT: torch.Tensor) -> None:
    """phase_fwd_kernel at its launch settings: the phases of angles [B, T, H, A] (dt [B, H,
    T], theta0 [B, H, A]) into phase [B, T, H, A] fp64, the last into thetaT."""
    B, T, H, A = angles.shape
    phase_fwd_kernel[(H, B)](angles, dt, theta0, phase, thetaT, T, H, A,
                             BA=max(16, triton.next_power_of_2(A)), BT=1024, BS=PHASE_BLOCK,
                             BP=8, num_warps=PHASE_WARPS)


def mamba3_siso_forward(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, states: States,
                        chunk_size: int = 64, block_v: int = 64,
                        store: bool = False):
    """reference.mamba3_siso_recurrence's arguments (initial states required), chunked;
    outputs in q's dtype. Returns (out, final States), and with `store` the Saved buffers
    after them."""
    check_shapes(q, k, v, angles, states)
    args = [x.contiguous() if x is not None else None
            for x in (q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z)]
    states = States(*(s.contiguous() for s in states))
    B, T, Hq, K = q.shape
    H, V, A = v.shape[2], v.shape[3], angles.shape[-1]
    if T == 0:
        raise ValueError("an empty sequence (T = 0)")
    out = torch.empty(B, T, H, V, dtype=q.dtype, device=q.device)
    final = new_states(states, q.dtype)
    NC = triton.cdiv(T, chunk_size)
    saved = [None, None]
    if store:
        saved = [torch.empty(B * H, NC + 1, V, K, dtype=torch.float32, device=q.device),
                 torch.empty(B, T, H, V, dtype=torch.float32, device=q.device)]
    phase = torch.empty(B, T, H, A, dtype=torch.float64, device=q.device)
    launch_phases(args[8], args[4], states.angle, phase, final.angle)
    qr = torch.empty(B, T, H, K, dtype=q.dtype, device=q.device)
    kr = torch.empty_like(qr)
    rotate_fwd_kernel[(triton.cdiv(T, ROTATE_ROWS), H, B)](
        args[0], args[1], phase, args[6], args[7], qr, kr, T, H, H // Hq, K, A, BT=ROTATE_ROWS,
        BK2=pair_block(K), num_warps=ROTATE_WARPS)
    # the last token's turned key: its row of kr, back from halves to pairs
    final.k.copy_(torch.stack((kr[:, -1, :, :K // 2], kr[:, -1, :, K // 2:]), -1).flatten(-2))
    BV = min(block_v, max(16, triton.next_power_of_2(V)))
    chunk_fwd_kernel[(triton.cdiv(V, BV), H, B)](
        qr, kr, *args[2:6], *args[9:], *states[1:], out, final.ssm, final.v, *saved, T, H, K, V,
        BT=chunk_size, BK2=pair_block(K), BV=BV, HAS_D=D is not None, HAS_Z=z is not None,
        STORE=store, **launch("forward", q.dtype))
    fallback = fallback_flag(out, *final)
    recurrent_forward(*args, states, out, final, when=fallback)
    if store:
        return out, final, Saved(phase, *saved, fallback)
    return out, final


# The decode step's launch, from the H200 at B 128 (benchmarks/mamba3_profile.py, bare
# launches, 2026-12-04): BV 16 at 2 warps 0.290 ms, at 1 0.295, at 4 0.675; BV 32 at 2 warps
# 0.560, at 4 (the forward's fallback setting) 2.26; BV 64 at 4 warps 8.92. The fallback keeps
# BV 32 at 4 warps: at 2 warps problem 2's PRC-03 raised an illegal memory access on the H200
# (kernels/mamba3/NOTES.md), not yet understood.
DECODE_BLOCK_V, DECODE_WARPS = 16, 2


def mamba3_siso_step(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z,
                     states: States) -> tuple[torch.Tensor, States]:
    """One decode step: q, k [B, H / G, K]; v, z [B, H, V]; adt, dt, trap [B, H]; angles
    [B, H, A]; states as reference.States. Returns (out [B, H, V], the next States)."""
    tokens = [x.unsqueeze(1) if x is not None else None for x in (q, k, v)]
    gates = [x.unsqueeze(-1) for x in (adt, dt, trap)]
    check_shapes(tokens[0], tokens[1], tokens[2], angles, states)
    args = [x.contiguous() if x is not None else None
            for x in (*tokens, *gates, q_bias, k_bias, angles.unsqueeze(1), D,
                      None if z is None else z.unsqueeze(1))]
    states = States(*(s.contiguous() for s in states))
    out = torch.empty_like(args[2], dtype=q.dtype)
    final = new_states(states, q.dtype)
    recurrent_forward(*args, states, out, final, block_v=DECODE_BLOCK_V,
                      num_warps=DECODE_WARPS)
    return out.squeeze(1), final
