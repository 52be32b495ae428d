"""Chunked Mamba-3 SISO forward (chunked.py's algorithm) in Triton kernels, and the
decode step; each with its host wrapper.

The phases (fp64, the reference's angles mod 2 pi): turn_sums_kernel sums the turns over
blocks of tokens, every block at once; phase_carry_kernel carries the phase from block to
block, or walks token by token where a turn may exceed pi. In the training step
rotate_fwd_kernel, one program per (rows, head, sequence), finishes each row's phase and
forms the rotated q' and k' (cos, sin, the biases added), rounded to the working dtype as the
products that read them would; the backward reads both. Where the inference forward walks
once, phase_fwd_kernel finishes the phases alone, in fp32, and the walk turns each chunk's q
and k itself (chunk_rows_keys): at the paper's sizes in bf16 the phases are a quarter of q'
and k''s bytes.
chunk_fwd_kernel, one program per (V-block, head, sequence), walks the
sequence's chunks of BT tokens, holding the [BV, K] state (fp32, as its two halves of key
pairs) across chunks. Where that walk's grid would not fill the GPU, and in the training
step, chunk_states_kernel walks the states alone, storing each, and chunk_out_kernel forms
every chunk's output at once. Per chunk: the chunk-local log-decay sums la (fp64:
exp(la_r - la_s) subtracts them before an fp32 exp, as kernels/gdn's gc),
P = (Q' K'^T) * decay * weight (lower triangle), y = exp(la) Q' S^T + P V, D v and silu(z),
and the state step S <- exp(la_last) S + (V * w)^T K'.

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
from kdiff.kernels.gdn.host import multiprocessors, value_block
from kdiff.kernels.gdn.tile_ops import mm
from kdiff.kernels.mamba3.ops import (
    cos_sin,
    load_halves,
    load_pair_rows,
    mod_two_pi,
    mod_two_pi_near,
    negative_zero,
    pair_offsets,
    phase_step,
    sigmoid,
    silu,
    state_tile,
    store_pair_rows,
    turn,
)
from kdiff.kernels.mamba3.recurrent import pair_block, recurrent_forward
from kdiff.kernels.mamba3.reference import States

# Warps and pipeline stages of the chunk kernels (chunk_fwd_kernel: "forward", backward.py's
# chunk_state_bwd_kernel and chunk_intra_bwd_kernel: "backward"), by working dtype: "fp32" or
# "low" (bf16, fp16). Read at each
# launch, so a caller may set them before its first (kernels/tune_examples/mamba3_tunable.py).
# fp32 (IEEE products on the FMA units): 8 warps and one stage; with 4 warps and the default 3
# stages chunk_fwd_kernel at K = 128, V = 64, C = 64 needed 267 kB of shared memory on sm_90
# (Triton 3.9, compiled here), over its 227 kB, and 82 kB with these. Both kernels hold
# [C, K/2] and [V, K/2] fp32 tiles that do not fit 4 warps' registers: on sm_90
# (benchmarks/mamba3_compile_sweep.py, C = 64, BV = 64) bf16 chunk_fwd_kernel spills 1.7 kB at
# 4 warps and 0.66 kB at 8 (a second stage only adds shared memory). Timed whole, the bf16
# forward at 16 x 2048 (C 64, one stage) still ran faster at 4 warps than at 8: 3.56 against
# 3.98 ms on the H200, 3.63 against 4.07 ms on an H100 (mamba3_profile.py --parts
# forward_sweep; NOTES.md). The backward's chunk kernels (Triton 3.6, bf16, C 64): at 8 warps
# 148 B (state) and 52 B (intra) of spills, at 4 warps 648 B and 72 B; in fp32 at 8 warps
# 2.5 kB and 29 kB (one kernel doing both spilled 1.75 kB at 8 warps in bf16, 2.7 kB at 4,
# and 42.7 kB in fp32). Timed on an H100 (bf16 buffers, forward + backward at 16 x 2048,
# mamba3_profile.py --parts backward_sweep): the chunk kernels at 4 warps 9.11 ms against
# 10.42 at 8, state_bwd_kernel at 4 warps 10.21 against 10.42; both at 4, 8.80.
# backward.py's state_bwd_kernel ("state"): one [V, C] x [C, K / 2] product for each half of K
# and the rotation of q a chunk. Compiled for sm_90 (Triton 3.6, K 128, V 64, C 64;
# mamba3_compile_sweep.py --kernels state_bwd): at 8 warps 255 registers, 8 B of spills in fp32
# and 16 B in bf16 at one stage; Triton's default of 3 stages needed 246 kB of shared memory in
# fp32 (over sm_90's 227 kB: the launch failed on an H100 at these sizes) and 49 kB at one;
# at 4 warps 18 kB of spills in fp32.
# The training step's forward in two kernels: chunk_states_kernel ("train") walks the
# states alone, storing each; chunk_out_kernel ("output") then forms every chunk's output at
# once. In one walk that stored them (bf16, BV 64, Triton 3.6, sm_90) it spilled 1,124 B a
# thread at 4 warps and 672 B at 8 (468 B at 4 warps without the stores), and took 1.65 ms
# at 16 x 2048 on an H100 against 0.85 ms for the forward's own walk.
WARPS = {"forward": {"fp32": 8, "low": 4}, "train": {"fp32": 8, "low": 4},
         "output": {"fp32": 8, "low": 4},
         "backward": {"fp32": 8, "low": 4}, "state": {"fp32": 8, "low": 4}}
STAGES = {"forward": {"fp32": 1, "low": 1}, "train": {"fp32": 1, "low": 1},
          "output": {"fp32": 1, "low": 1},
          "backward": {"fp32": 1, "low": 1}, "state": {"fp32": 1, "low": 1}}

# The V-block of the kernels that take every chunk at once (chunk_out_kernel, the backward's
# chunk kernels): past it, each block of V's columns is a program of its own. One block of
# all V (512 at V 260, a chosen size of kdiff PRC-02) asked for 336 kB of shared memory on an
# H100 (Triton 3.6, bf16, the backward's chunk kernels), over its 227 kB.
CHUNK_BLOCK_V = 128


# chunk_fwd_kernel's V-block: the widest of these whose grid (V-blocks x heads x sequences)
# still fills the GPU's multiprocessors, since each program walks its sequence's chunks one
# after another. H100, bf16 forward, H 32, V 64 (mamba3_profile.py --parts state_block_sweep,
# 2026-12-06), at V-block 64 / 32 / 16: B 16 x 2048 (512 programs at 64) 1.82 / 2.12 / 2.72 ms;
# B 4 x 8192 (128 at 64, 256 at 32) 2.52 / 2.27 / 2.96; B 1 x 16384 (32, 64, 128) 3.56 / 2.98 /
# 2.61.
FORWARD_BLOCK_V = (64, 32, 16)


def fills_the_gpu(sequence_heads: int, V: int, BV: int, device: torch.device) -> bool:
    """Whether a walk's grid (V-blocks of BV x heads x sequences) reaches the GPU's
    multiprocessors."""
    return sequence_heads * triton.cdiv(V, BV) >= multiprocessors(device)


def forward_block_v(sequence_heads: int, V: int, device: torch.device) -> int:
    """The V-block of a walk over the chunks, chunk_fwd_kernel's or chunk_states_kernel's
    (FORWARD_BLOCK_V's rule); the widest off CUDA."""
    for widest in FORWARD_BLOCK_V:
        BV = value_block(V, widest)
        if fills_the_gpu(sequence_heads, V, BV, device):
            break
    return BV


# The inference forward walks once (chunk_fwd_kernel) where that walk's grid fills the GPU at
# the widest V-block; else it takes the training forward's two kernels, the states' walk
# and then every chunk's output at once. An H100, bf16, H 32, V 64, each forward timed whole
# (mamba3_profile.py --parts forward_walks, 2026-12-07, twenty-seventh session), one walk
# against the two kernels: 16 x 2048 (512 programs at V-block 64) 1.732 / 1.779 ms; 4 x 8192
# (128) 2.129 / 2.007; 1 x 16384 (32) 2.468 / 1.813.
# The chunks' tokens by default. The one walk turns each chunk's q and k itself (TURN), which
# at 64 tokens spills its registers: compiled for sm_90 (Triton 3.6, bf16, 4 warps, V-block
# 64; mamba3_compile_sweep.py --kernels chunk_fwd) 752 B a thread at 64 tokens and 132 B at
# 32. The inference forward at 16 x 2048 on an H100, bf16, timed whole
# (mamba3_profile.py --parts forward_sweep, twenty-eighth session): 1.558 ms at chunks of 32
# (4 warps, one stage; 1.556 and 1.557 at 2 and 3 stages), 1.875 at 64, against 1.735 for
# the walk that read rotate_fwd_kernel's q' and k' at 64 (twenty-seventh session; 1.536 at 32
# but only with 3 stages, a software pipeline of a sequential walk, which is what corrupts
# mamba_ssm's forward on Blackwell). The other kernels keep 64.
WALK_CHUNK, CHUNK = 32, 64


def walks_once(sequence_heads: int, V: int, device: torch.device) -> bool:
    """Whether the inference forward forms each chunk's output in its one walk."""
    return fills_the_gpu(sequence_heads, V, value_block(V, FORWARD_BLOCK_V[0]), device)


def launch(kernel: str, dtype: torch.dtype) -> dict:
    """The launch options of `kernel` ("forward": chunk_fwd_kernel; "train" and "output": the
    training forward's chunk_states_kernel and chunk_out_kernel; "backward": the backward's
    chunk kernels; "state": state_bwd_kernel) in `dtype`."""
    key = "fp32" if dtype == torch.float32 else "low"
    return {"num_warps": WARPS[kernel][key], "num_stages": STAGES[kernel][key]}


# The phases' blocks: PHASE_BLOCK tokens, a [PHASE_BLOCK, A <= 64] fp64 tile of
# turn_sums_kernel on PHASE_WARPS warps (the sums' rounding grows with the block; the carries'
# chain with T / PHASE_BLOCK). Compiled for sm_90 with Triton 3.6 at A = 32
# (mamba3_compile_sweep.py --kernels phase): 68 registers a thread at 16 tokens on 4 warps,
# seven programs an SM; 200 at 64 tokens, two. Both kernels at 16 x 2048 (A = 32): 0.28 ms
# on an H100 (mamba3_profile.py --parts phase_parts), against 1.09 ms for a walk per sequence.
# The largest |dt| whose sequence's phases are summed per block rather than walked token by
# token (a turn of 1e30 summed with the next keeps neither's phase; the reference reduces
# each). With |dt| <= D = 256 a turn is within D pi and a block's running sum within
# BS D pi: each addition rounds by at most u64 BS D pi, and each carry and each token's
# phase once more at 2 pi + BS D pi and once at 2 pi (a negative's + 2 pi). At BS = 16,
# T = 16384: (16 + 1024 + 1) x 2 u64 (2 pi + 16 x 256 pi) < 3.3e-9, under 2% of the fp32
# rounding of a phase near 2 pi (2.4e-7). Softplus dt rarely passes 1; drawn at random it
# reached 1.15 at 16 x 2048, which with a bound of 1 sent 3 of 512 sequences down the
# walk: 0.80 ms for the whole launch on the H200, against 0.21 ms for every block's sums.
SUMS_MAX_DT = tl.constexpr(256.0)

# rotate_fwd_kernel: ROTATE_ROWS rows a program on ROTATE_WARPS warps; elementwise, so no
# setting changes a bit of its result. The bf16 forward at 16 x 2048 with the phases walked
# per sequence in blocks of 64 on 4 warps, timed whole with one setting changed at a time on
# an H100 (mamba3_profile.py --parts phase_rotation_sweep, 2026-12-05): rotation rows 64:
# 3.50 ms, 8: 2.59, 16: 2.78, 32: 3.38; rotation warps 4: 3.43 ms, 1 and 2: 8.2 and 10.3. At
# 64 rows the rotation held 181 registers a thread (Triton 3.6, sm_90): one program of 8
# warps an SM.
PHASE_BLOCK, PHASE_WARPS = 16, 4
ROTATE_ROWS, ROTATE_WARPS = 8, 8

# The largest key head dimension: the kernel holds [BT, K / 2] tiles of q' and k' (two
# halves each) and the [BV, K] state; Mamba-3's d_state is 128 (NOTES.md), and at 256 the
# fp32 tiles already take 4 x 64 x 128 x 4 B = 128 KiB of registers per program at BT = 64.
MAX_HEAD_DIM_K = 256


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
def phase_tile(phase, rows, rm, H, h, A, j, am):
    """The rows' stored phases of head h, [rows, pairs] fp64 (0 past the A angles)."""
    return tl.load(phase + (rows[:, None] * H + h) * A + j[None, :],
                   mask=rm[:, None] & am[None, :], other=0.0)


@triton.jit
def turned_keys(x, rows, rm, Hq, hq, K, j, jm, am, xbe, xbo, cos, sin):
    """The rows' x (q or k, key head hq) plus its bias, each pair with an angle turned by
    (cos, sin): x' as its two halves of key pairs (fp32)."""
    x0, x1 = load_pair_rows(x, ((rows * Hq + hq) * K)[:, None], rm, K, j.shape[0])
    return turn(x0 + xbe[None, :], x1 + xbo[None, :], cos, sin, am[None, :])


@triton.jit
def chunk_keys(q, k, th, rows, rm, Hq, hq, K, j, jm, am, qbe, qbo, kbe, kbo):
    """The rows' phases th [rows, pairs] as (cos, sin) and their rotated q' and k' with the
    biases, each as its two halves of key pairs (fp32)."""
    # cos and sin within 2u absolute (ops.cos_sin). Through a rotation (norm-preserving)
    # that is at most 2 sqrt 2 u ~ 3 roundings of the pair's norm, against the test
    # module's error model: it counts K + V + 4C roundings per chunk where the longest path
    # forms K + 2C + 10 (rotation 3, q'.k' K, P's 3, P V C, the state step C + 1, D v and
    # silu 3), a slack of V + 2C - 10 >= 46 at every tested size, so N stands.
    cos, sin = cos_sin(th)
    qe, qo = turned_keys(q, rows, rm, Hq, hq, K, j, jm, am, qbe, qbo, cos, sin)
    ke, ko = turned_keys(k, rows, rm, Hq, hq, K, j, jm, am, kbe, kbo, cos, sin)
    return cos, sin, qe, qo, ke, ko


@triton.jit
def turn_sums_kernel(angles, dt, sums, T, H, A, BA: tl.constexpr, BS: tl.constexpr):
    """Grid (blocks of BS tokens, H, B): into sums [B, T, H, A] fp64, the running sum of the
    turns pi tanh(angles_t) dt_t within each block, token 0's taken as -0.0 (phase_carry_kernel
    carries it; -0.0 keeps the sign of any sum it joins). Every block at once: the per-token
    fp64 work (tanh64, an exp and a division) is the phases' cost, and a walk over a
    sequence holds few warps an SM. Where every |dt| <= SUMS_MAX_DT a block's sum is
    within BS SUMS_MAX_DT pi: SUMS_MAX_DT's comment bounds the rounding."""
    c, h, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    t = c * BS + tl.arange(0, BS)
    a = tl.arange(0, BA)
    m = (t < T)[:, None] & (a < A)[None, :]
    offs = ((b.to(tl.int64) * T + t[:, None]) * H + h) * A + a[None, :]
    turns = phase_step(tl.load(angles + offs, mask=m, other=0.0),
                       tl.load(dt + (b.to(tl.int64) * H + h) * T + t, mask=t < T,
                               other=0.0)[:, None])
    turns = tl.where(t[:, None] == 0, negative_zero(turns), turns)
    tl.store(sums + offs, tl.cumsum(turns, 0), mask=m)


@triton.jit
def _phase_walk(angles, dt, phase, theta, first, bh, T, H, h, A, a, am, BP: tl.constexpr):
    """Tokens 1.. of phase_carry_kernel's walk from token 0's phase `theta`, token by token as
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
            turn_i = tl.sum(tl.where(p[:, None] == i, turns, negative_zero(turns)), 0)
            theta = tl.where(t0 + i < T, mod_two_pi(theta + turn_i), theta)
            block = tl.where(p[:, None] == i, theta[None, :], block)
        rows = t0 + p
        tl.store(phase + ((first + rows[:, None]) * H + h) * A + a[None, :], block,
                 mask=(rows < T)[:, None] & am[None, :])
    return theta


@triton.jit
def phase_carry_kernel(angles, dt, theta0, sums, carry, walked, thetaT, T, H, A,
                       BA: tl.constexpr, BT: tl.constexpr, BS: tl.constexpr,
                       BP: tl.constexpr):
    """Grid (H, B), after turn_sums_kernel. Token 0's phase theta_0 = (theta0 + its turn) mod
    2 pi with the exact fmod (theta0 may be any size). Where the sequence's |dt| are all at
    most SUMS_MAX_DT (a check over its T values first): the phase entering each block of BS
    tokens into carry [B, H, blocks, A] fp64, carry_0 = theta_0 and carry_{i+1} = (carry_i +
    block i's sum) mod 2 pi, the last of these the final phase
    (thetaT). The phase of token t > 0 is then (carry of its block + sums_t) mod 2 pi
    (rotate_fwd_kernel forms it: a block's last is the next block's carry). Otherwise, walked
    [B * H] = 1 and the walk goes token by token from theta_0 as the reference (_phase_walk,
    blocks of BP), its phases written over sums."""
    h, b = tl.program_id(0), tl.program_id(1)
    bh = b.to(tl.int64) * H + h
    a = tl.arange(0, BA)
    am = a < A
    theta = tl.load(theta0 + bh * A + a, mask=am, other=0.0).to(tl.float64)
    first = b.to(tl.int64) * T
    theta = mod_two_pi(theta + phase_step(
        tl.load(angles + (first * H + h) * A + a, mask=am, other=0.0), tl.load(dt + bh * T)))
    large = 0  # dt values outside [-SUMS_MAX_DT, SUMS_MAX_DT], NaN among them
    for t0 in range(0, T, BT):
        r = t0 + tl.arange(0, BT)
        d = tl.load(dt + bh * T + r, mask=r < T, other=0.0)
        large += tl.sum(tl.where(tl.abs(d) <= SUMS_MAX_DT, 0, 1), 0)
    tl.store(walked + bh, tl.minimum(large, 1))
    if large == 0:
        NB = tl.cdiv(T, BS)
        for i in range(0, NB):
            tl.store(carry + (bh * NB + i) * A + a, theta, mask=am)
            last = first + tl.minimum(i * BS + BS, T) - 1
            block = tl.load(sums + (last * H + h) * A + a, mask=am, other=0.0)
            # token 0's phase as reduced above (it may be 2 pi, rounded up), as the reference
            theta = tl.where(last == first, theta, mod_two_pi_near(theta + block))
    else:
        tl.store(sums + (first * H + h) * A + a, theta, mask=am)
        theta = _phase_walk(angles, dt, sums, theta, first, bh, T, H, h, A, a, am, BP)
    tl.store(thetaT + bh * A + a, theta.to(thetaT.dtype.element_ty), mask=am)


@triton.jit
def halves_offsets(rows, H, h, K, j):
    """Offsets in a [B, T, H, K] tensor of halves (rotate_fwd_kernel's) of rows' pairs j at
    head h: their first elements, then their second."""
    first = ((rows * H + h) * K)[:, None] + j[None, :]
    return first, first + K // 2


@triton.jit
def state_halves_offsets(bh, slot, slots, V, K, cv, j):
    """Offsets of the first halves in state `slot` of a [B * H, slots, V, K] buffer of
    states kept as halves (a row's even pair elements at j, its odd at K / 2 + j), so that a
    row's halves are contiguous: the training buffers hbuf and dhbuf."""
    return (bh * slots + slot) * V * K + cv[:, None] * K + j[None, :]


@triton.jit
def store_state_halves(buf, off, K, first, second, mask):
    """A state tile's two halves into a buffer of states kept as halves, at `off`
    (state_halves_offsets'), in the buffer's precision."""
    tl.store(buf + off, first.to(buf.dtype.element_ty), mask=mask)
    tl.store(buf + off + K // 2, second.to(buf.dtype.element_ty), mask=mask)


@triton.jit
def load_state_halves(buf, off, K, mask):
    """A state tile's two halves (fp32) from a buffer of states kept as halves, at `off`."""
    return (tl.load(buf + off, mask=mask, other=0.0).to(tl.float32),
            tl.load(buf + off + K // 2, mask=mask, other=0.0).to(tl.float32))


@triton.jit
def load_head_halves(x, rows, rm, H, h, K, j, jm):
    """The rows' tile of head h of a tensor of halves (rotate_fwd_kernel's layout: q' or k',
    or a gradient of one) as its two halves, in x's dtype; with their mask and the halves'
    offsets, for stores alike."""
    pm = rm[:, None] & jm[None, :]
    first, second = halves_offsets(rows, H, h, K, j)
    return (pm, first, second, tl.load(x + first, mask=pm, other=0.0),
            tl.load(x + second, mask=pm, other=0.0))


@triton.jit
def load_halves_pair(x, y, rows, rm, H, h, K, j, jm):
    """load_head_halves of two tensors of halves at the same rows (q' and k', or their
    gradients)."""
    pm, first, second, xe, xo = load_head_halves(x, rows, rm, H, h, K, j, jm)
    _, _, _, ye, yo = load_head_halves(y, rows, rm, H, h, K, j, jm)
    return pm, first, second, xe, xo, ye, yo


@triton.jit
def row_phases(sums, carry, walked, t, rm, rows, bh, T, H, h, A, j, am, BS: tl.constexpr,
               STORE: tl.constexpr):
    """Tokens t's phases of head h [rows, pairs] fp64 from phase_carry_kernel's results: the
    walk's as stored, or (the carry of the token's block + its running sum) mod 2 pi (token
    0's phase is its block's carry), written over sums with STORE."""
    th = phase_tile(sums, rows, rm, H, h, A, j, am)
    if tl.load(walked + bh) == 0:
        entering = tl.load(carry + ((bh * tl.cdiv(T, BS) + t // BS) * A)[:, None] + j[None, :],
                           mask=rm[:, None] & am[None, :], other=0.0)
        th = tl.where(t[:, None] == 0, entering, mod_two_pi_near(entering + th))
        if STORE:
            tl.store(sums + (rows[:, None] * H + h) * A + j[None, :], th,
                     mask=rm[:, None] & am[None, :])
    return th


@triton.jit
def phase_rows(sums, carry, walked, T, H, K, A, BT: tl.constexpr, BK2: tl.constexpr,
               BS: tl.constexpr, STORE: tl.constexpr):
    """A program's share of a grid (blocks of BT rows, H, B): its head h, the key pairs j
    (mask jm, am: those with an angle), its tokens t (mask rm) and their rows (b T + t), and
    their phases (row_phases', written over sums with STORE)."""
    c, h, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    j, jm = pair_offsets(K, BK2)
    am = j < A
    t = c * BT + tl.arange(0, BT)
    rm = t < T
    rows = b.to(tl.int64) * T + t
    th = row_phases(sums, carry, walked, t, rm, rows, b.to(tl.int64) * H + h, T, H, h, A, j,
                    am, BS, STORE)
    return h, j, jm, am, t, rm, rows, th


@triton.jit
def rotate_fwd_kernel(q, k, sums, carry, walked, q_bias, k_bias, qr, kr, T, H, G, K, A,
                      BT: tl.constexpr, BK2: tl.constexpr, BS: tl.constexpr,
                      STORE: tl.constexpr):
    """Grid (blocks of BT rows, H, B): each row's phase from phase_carry_kernel's (its
    block's carry plus sums, mod 2 pi, or the walk's phase as stored), written over sums
    with STORE (the backward reads them), and chunk_keys' q' and k' of head h, stored in
    qr's dtype as halves ([B, T, H, K]: pair j's turned first element at j, its second at
    K / 2 + j). Rounding them to the working dtype here is the rounding the chunk kernels'
    products (mm) apply, so their results do not change; chunk_states_kernel's walk,
    sequential over a sequence, and chunk_out_kernel load the tiles instead of forming them
    (the cosines, the sines and the strided pair loads)."""
    h, j, jm, am, t, rm, rows, th = phase_rows(sums, carry, walked, T, H, K, A, BT, BK2, BS,
                                               STORE)
    hq = h // G
    qbe, qbo = load_halves(q_bias, h * K, j, jm)
    kbe, kbo = load_halves(k_bias, h * K, j, jm)
    _, _, qe, qo, ke, ko = chunk_keys(q, k, th, rows, rm, H // G, hq, K, j, jm, am,
                                      qbe, qbo, kbe, kbo)
    first, second = halves_offsets(rows, H, h, K, j)
    pm = rm[:, None] & jm[None, :]
    DT: tl.constexpr = qr.dtype.element_ty
    tl.store(qr + first, qe.to(DT), mask=pm)
    tl.store(qr + second, qo.to(DT), mask=pm)
    tl.store(kr + first, ke.to(DT), mask=pm)
    tl.store(kr + second, ko.to(DT), mask=pm)


@triton.jit
def phase_fwd_kernel(sums, carry, walked, k, k_bias, theta, kT, T, H, G, K, A,
                     BT: tl.constexpr, BK2: tl.constexpr, BS: tl.constexpr):
    """The inference forward's rotate_fwd_kernel, grid (blocks of BT rows, H, B): each row's
    phase (row_phases') into theta [B, T, H, A] as fp32, and the last token's turned key
    (chunk_keys' k') into kT [B, H, K] in kT's dtype. chunk_fwd_kernel turns q and k itself
    from these phases (chunk_rows_keys), so q' and k' per head never pass through memory: at
    16 x 2048 (H 32, K 128, bf16) rotate_fwd_kernel wrote 537 MB of them and the walk read
    them back; the phases are 134 MB."""
    h, j, jm, am, t, rm, rows, th = phase_rows(sums, carry, walked, T, H, K, A, BT, BK2, BS,
                                               False)
    tl.store(theta + (rows[:, None] * H + h) * A + j[None, :], th.to(tl.float32),
             mask=rm[:, None] & am[None, :])
    if tl.program_id(0) == (T - 1) // BT:
        last = rm & (t == T - 1)
        cos, sin = cos_sin(th)
        kbe, kbo = load_halves(k_bias, h * K, j, jm)
        ke, ko = turned_keys(k, rows, last, H // G, h // G, K, j, jm, am, kbe, kbo, cos, sin)
        bh = tl.program_id(2).to(tl.int64) * H + h
        store_pair_rows(kT, tl.zeros_like(rows)[:, None] + bh * K, last, K, ke, ko)


@triton.jit
def chunk_rows_keys(qx, kx, q_bias, k_bias, theta, rows, rm, H, h, G, K, A, j, jm,
                    TURN: tl.constexpr):
    """The rows' q' and k' of head h as halves of key pairs: loaded from rotate_fwd_kernel's
    (qx, kx = qr, kr), or with TURN turned here from q and k (qx, kx), their biases and
    phase_fwd_kernel's fp32 phases (then fp32). Either way the products (mm) that read them
    round them to the working dtype, as rotate_fwd_kernel's stores do. The fp32 phase is within
    2^-22 (4u) of the fp64 one below 2 pi, and cos and sin are 1-Lipschitz: 6u absolute
    with cos_sin's 2u, about 9 roundings of a pair's norm through the rotation, within the
    slack that chunk_keys' comment counts."""
    if TURN:
        am = j < A
        th = tl.load(theta + (rows[:, None] * H + h) * A + j[None, :],
                     mask=rm[:, None] & am[None, :], other=0.0)
        qbe, qbo = load_halves(q_bias, h * K, j, jm)
        kbe, kbo = load_halves(k_bias, h * K, j, jm)
        _, _, qe, qo, ke, ko = chunk_keys(qx, kx, th.to(tl.float64), rows, rm, H // G, h // G,
                                          K, j, jm, am, qbe, qbo, kbe, kbo)
    else:
        _, _, _, qe, qo, ke, ko = load_halves_pair(qx, kx, rows, rm, H, h, K, j, jm)
    return qe, qo, ke, ko


@triton.jit
def chunk_and_block(V, BV: tl.constexpr):
    """A program's chunk and V-block in a grid of (chunks x V-blocks, H, B)."""
    return tl.program_id(0) // tl.cdiv(V, BV), tl.program_id(0) % tl.cdiv(V, BV)


@triton.jit
def entering_state(S0, k0, v0, dt, trap, bh, T, K, V, j, jm, cv, vm, sm, soff):
    """The state entering the first chunk, S_0 = S_init + ((1 - lam_0) dt_0) v_init
    k_init^T, as its two halves (fp32); alpha_0 comes with the first la."""
    lam0 = sigmoid(tl.load(trap + bh * T).to(tl.float32))
    prev0 = (1 - lam0) * tl.load(dt + bh * T).to(tl.float32)
    kpe, kpo = load_halves(k0, bh * K, j, jm)
    vp = tl.load(v0 + bh * V + cv, mask=vm, other=0.0).to(tl.float32)
    Se = tl.load(S0 + soff, mask=sm, other=0.0).to(tl.float32) + prev0 * (
        vp[:, None] * kpe[None, :])
    So = tl.load(S0 + soff + 1, mask=sm, other=0.0).to(tl.float32) + prev0 * (
        vp[:, None] * kpo[None, :])
    return Se, So


@triton.jit
def chunk_output(qx, kx, q_bias, k_bias, theta, v, D, z, out, ybuf, Se, So, rows, rm, gamma,
                 scale, la, H, h, G, K, V, A, j, jm, cv, vm, BT: tl.constexpr,
                 HAS_D: tl.constexpr, HAS_Z: tl.constexpr, STORE: tl.constexpr,
                 TURN: tl.constexpr):
    """A chunk's rows of out (and of y before its gate into ybuf with STORE) from the state
    entering it (Se, So): y = exp(la) Q' S^T + P V + D v, with q' and k' as
    chunk_rows_keys gives them. Returns the chunk's k' halves and v (fp32) for the state's
    step."""
    DT: tl.constexpr = qx.dtype.element_ty
    r = tl.arange(0, BT)
    causal = r[None, :] <= r[:, None]
    qe, qo, ke, ko = chunk_rows_keys(qx, kx, q_bias, k_bias, theta, rows, rm, H, h, G, K, A,
                                     j, jm, TURN)
    v_off = ((rows * H + h) * V)[:, None] + cv[None, :]
    tm = rm[:, None] & vm[None, :]
    vt = tl.load(v + v_off, mask=tm, other=0.0).to(tl.float32)
    qk = mm(qe, tl.trans(ke), DT) + mm(qo, tl.trans(ko), DT)
    decay = tl.exp(tl.where(causal, la[:, None] - la[None, :], 0.0).to(tl.float32))
    weight = tl.where(r[None, :] == r[:, None], gamma[None, :], scale[None, :])
    P = tl.where(causal, qk * decay * weight, 0.0)
    y = (tl.exp(la.to(tl.float32))[:, None]
         * (mm(qe, tl.trans(Se), DT) + mm(qo, tl.trans(So), DT)) + mm(P, vt, DT))
    if HAS_D:
        y = y + tl.load(D + h).to(tl.float32) * vt
    if STORE:
        tl.store(ybuf + v_off, y.to(ybuf.dtype.element_ty), mask=tm)
    if HAS_Z:
        y = y * silu(tl.load(z + v_off, mask=tm, other=0.0).to(tl.float32))
    tl.store(out + v_off, y.to(out.dtype.element_ty), mask=tm)
    return ke, ko, vt


@triton.jit
def state_step(Se, So, ke, ko, vt, scale, la, la_last, DT: tl.constexpr):
    """The state leaving a chunk: S <- exp(la_last) S + sum_s exp(la_last - la_s) scale_s
    v_s k'_s^T, as its halves."""
    wl = tl.exp((la_last - la).to(tl.float32)) * scale
    vw = tl.trans(vt * wl[:, None])
    carry = tl.exp(la_last.to(tl.float32))
    return carry * Se + mm(vw, ke, DT), carry * So + mm(vw, ko, DT)


@triton.jit
def store_final(ST, vT, v, Se, So, soff, sm, b, bh, T, H, h, V, cv, vm):
    """The state leaving the last chunk into ST (pairs, at state_tile's soff) and the last
    token's value into vT."""
    tl.store(ST + soff, Se.to(ST.dtype.element_ty), mask=sm)
    tl.store(ST + soff + 1, So.to(ST.dtype.element_ty), mask=sm)
    last = b.to(tl.int64) * T + T - 1
    vl = tl.load(v + (last * H + h) * V + cv, mask=vm, other=0.0)
    tl.store(vT + bh * V + cv, vl.to(vT.dtype.element_ty), mask=vm)


@triton.jit
def chunk_fwd_kernel(q, k, q_bias, k_bias, theta, v, adt, dt, trap, D, z, S0, k0, v0, out, ST,
                     vT, T, H, G, K, V, A, BT: tl.constexpr, BK2: tl.constexpr,
                     BV: tl.constexpr, HAS_D: tl.constexpr, HAS_Z: tl.constexpr):
    """Grid (V-blocks, H, B); tensors as recurrent_fwd_kernel's, T >= 1, with
    phase_fwd_kernel's phases (theta) in place of the angles: each program walks its
    sequence's chunks, the output of each from the state entering it, turning each chunk's
    q and k itself (chunk_rows_keys)."""
    i_v, h, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    bh, j, jm, cv, vm, sm, soff = state_tile(b, h, i_v, H, K, V, BK2, BV)
    Se, So = entering_state(S0, k0, v0, dt, trap, bh, T, K, V, j, jm, cv, vm, sm, soff)
    for c in range(0, tl.cdiv(T, BT)):
        t, rm, g, rows, gamma, scale, la, la_last = chunk_gates(adt, dt, trap, c, b, bh, T, BT)
        ke, ko, vt = chunk_output(q, k, q_bias, k_bias, theta, v, D, z, out, out, Se, So, rows,
                                  rm, gamma, scale, la, H, h, G, K, V, A, j, jm, cv, vm, BT,
                                  HAS_D, HAS_Z, False, True)
        Se, So = state_step(Se, So, ke, ko, vt, scale, la, la_last, q.dtype.element_ty)
    store_final(ST, vT, v, Se, So, soff, sm, b, bh, T, H, h, V, cv, vm)


@triton.jit
def chunk_states_kernel(kr, v, adt, dt, trap, S0, k0, v0, ST, vT, hbuf, T, H, K, V,
                        BT: tl.constexpr, BK2: tl.constexpr, BV: tl.constexpr):
    """The states' walk, grid (V-blocks, H, B): the state entering each chunk into hbuf
    [B * H, chunks + 1, V, K] as halves (state_halves_offsets) in hbuf's precision
    (saved_dtype's), the final one after them and in ST; chunk_out_kernel then forms every
    chunk's output at once. k' is rotate_fwd_kernel's: turned here, it lengthened this walk,
    which runs where few programs fill the GPU (an H100, bf16, 4 x 8192: 2.72 ms for the
    inference forward against 2.00, twenty-eighth session)."""
    i_v, h, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    bh, j, jm, cv, vm, sm, soff = state_tile(b, h, i_v, H, K, V, BK2, BV)
    Se, So = entering_state(S0, k0, v0, dt, trap, bh, T, K, V, j, jm, cv, vm, sm, soff)
    NC = tl.cdiv(T, BT)
    for c in range(0, NC):
        store_state_halves(hbuf, state_halves_offsets(bh, c, NC + 1, V, K, cv, j), K, Se, So,
                           sm)
        t, rm, g, rows, gamma, scale, la, la_last = chunk_gates(adt, dt, trap, c, b, bh, T, BT)
        _, _, _, ke, ko = load_head_halves(kr, rows, rm, H, h, K, j, jm)
        vt = tl.load(v + ((rows * H + h) * V)[:, None] + cv[None, :],
                     mask=rm[:, None] & vm[None, :], other=0.0).to(tl.float32)
        Se, So = state_step(Se, So, ke, ko, vt, scale, la, la_last, kr.dtype.element_ty)
    store_state_halves(hbuf, state_halves_offsets(bh, NC, NC + 1, V, K, cv, j), K, Se, So, sm)
    store_final(ST, vT, v, Se, So, soff, sm, b, bh, T, H, h, V, cv, vm)


@triton.jit
def chunk_out_kernel(qr, kr, v, adt, dt, trap, D, z, hbuf, out, ybuf, T, H, K, V,
                     BT: tl.constexpr, BK2: tl.constexpr, BV: tl.constexpr,
                     HAS_D: tl.constexpr, HAS_Z: tl.constexpr, STORE: tl.constexpr):
    """The outputs after chunk_states_kernel's walk, grid (chunks x V-blocks, H, B): every
    chunk at once, from the state entering it (hbuf) and rotate_fwd_kernel's q' and k'; with
    STORE (the training forward) y before its gate into ybuf [B, T, H, V] (saved_dtype's).
    The states in hbuf are rounded to its precision, which the products here round them to
    anyway: out is chunk_fwd_kernel's up to the order in which the compiled products round."""
    c, i_v = chunk_and_block(V, BV)
    h, b = tl.program_id(1), tl.program_id(2)
    bh, j, jm, cv, vm, sm, soff = state_tile(b, h, i_v, H, K, V, BK2, BV)
    Se, So = load_state_halves(hbuf, state_halves_offsets(bh, c, tl.cdiv(T, BT) + 1, V, K,
                                                          cv, j), K, sm)
    t, rm, g, rows, gamma, scale, la, la_last = chunk_gates(adt, dt, trap, c, b, bh, T, BT)
    # read, not turned: no biases, phases, G or A
    chunk_output(qr, kr, None, None, None, v, D, z, out, ybuf, Se, So, rows, rm, gamma, scale,
                 la, H, h, 1, K, V, 0, j, jm, cv, vm, BT, HAS_D, HAS_Z, STORE, False)


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


def saved_dtype(dtype: torch.dtype) -> torch.dtype:
    """The precision of the tensors one kernel of the training step leaves for another (the
    states entering each chunk and their gradients, y before its gate, the gradients of q'
    and k', and of q and k per head): bf16 in bf16. Each is rounded once more to the working
    precision, as the reference's own operations round every result, and the tile products that read the
    states round them to it anyway (tile_ops.mm); at the paper's 16 x 2048 they move 3.5 GB
    less than in fp32. fp16 keeps fp32: its range ends at 65504, where a state or gradient
    that the reference holds need not."""
    return torch.bfloat16 if dtype == torch.bfloat16 else torch.float32


class Saved(NamedTuple):
    """What the chunked forward keeps for the backward: the phases, the states entering
    each chunk (hbuf) and y before its gate (ybuf), the fallback decision (a one-element
    int32 device flag: the results were recomputed token by token, so the buffers are not
    theirs), and rotate_fwd_kernel's q' and k' (halves, the working dtype: what the chunk
    kernels' products read)."""
    phase: torch.Tensor
    hbuf: torch.Tensor
    ybuf: torch.Tensor
    fallback: torch.Tensor
    qr: torch.Tensor
    kr: torch.Tensor


class Phases(NamedTuple):
    """phase_carry_kernel's results, which rotate_fwd_kernel turns into the phases: sums [B,
    T, H, A] fp64 (the blocks' running sums, or a walked sequence's phases), carry [B, H,
    blocks, A] fp64, walked [B * H] int32."""
    sums: torch.Tensor
    carry: torch.Tensor
    walked: torch.Tensor


def launch_phases(angles: torch.Tensor, dt: torch.Tensor, theta0: torch.Tensor,
                  thetaT: torch.Tensor) -> Phases:
    """turn_sums_kernel and phase_carry_kernel at their launch settings on angles [B, T, H, A],
    dt [B, H, T] and theta0 [B, H, A]; the final phase into thetaT."""
    B, T, H, A = angles.shape
    BA = max(16, triton.next_power_of_2(A))
    phases = Phases(torch.empty(B, T, H, A, dtype=torch.float64, device=angles.device),
                    torch.empty(B, H, triton.cdiv(T, PHASE_BLOCK), A, dtype=torch.float64,
                                device=angles.device),
                    torch.empty(B * H, dtype=torch.int32, device=angles.device))
    turn_sums_kernel[(triton.cdiv(T, PHASE_BLOCK), H, B)](
        angles, dt, phases.sums, T, H, A, BA=BA, BS=PHASE_BLOCK, num_warps=PHASE_WARPS)
    phase_carry_kernel[(H, B)](angles, dt, theta0, *phases, thetaT, T, H, A, BA=BA, BT=1024,
                               BS=PHASE_BLOCK, BP=8)
    return phases


def mamba3_siso_forward(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, states: States,
                        chunk_size: int | None = None, block_v: int | None = None,
                        store: bool = False):
    """reference.mamba3_siso_recurrence's arguments (initial states required), chunked;
    outputs in q's dtype. Returns (out, final States), and with `store` the Saved buffers
    after them. The inference forward walks once where walks_once says; otherwise, and
    always with `store`, the states' walk and then every chunk's output at once. chunk_size:
    the chunks' tokens, by default WALK_CHUNK in the one walk and CHUNK otherwise; block_v:
    the walk's V-block, forward_block_v's by default."""
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
    one_walk = not store and walks_once(B * H, V, q.device)
    chunk_size = chunk_size or (WALK_CHUNK if one_walk else CHUNK)
    NC = triton.cdiv(T, chunk_size)
    phases = launch_phases(args[8], args[4], states.angle, final.angle)
    rows = (triton.cdiv(T, ROTATE_ROWS), H, B)
    tiles = dict(BT=chunk_size, BK2=pair_block(K))
    flags = dict(HAS_D=D is not None, HAS_Z=z is not None)
    BV = value_block(V, block_v) if block_v else forward_block_v(B * H, V, q.device)
    gates = args[3:6]
    if one_walk:
        theta = torch.empty(B, T, H, A, dtype=torch.float32, device=q.device)
        phase_fwd_kernel[rows](*phases, args[1], args[7], theta, final.k, T, H, H // Hq, K, A,
                               BT=ROTATE_ROWS, BK2=pair_block(K), BS=PHASE_BLOCK,
                               num_warps=ROTATE_WARPS)
        chunk_fwd_kernel[(triton.cdiv(V, BV), H, B)](
            args[0], args[1], args[6], args[7], theta, args[2], *gates, *args[9:], *states[1:],
            out, final.ssm, final.v, T, H, H // Hq, K, V, A, BV=BV, **tiles, **flags,
            **launch("forward", q.dtype))
    else:
        qr = torch.empty(B, T, H, K, dtype=q.dtype, device=q.device)
        kr = torch.empty_like(qr)
        rotate_fwd_kernel[rows](
            args[0], args[1], *phases, args[6], args[7], qr, kr, T, H, H // Hq, K, A,
            BT=ROTATE_ROWS, BK2=pair_block(K), BS=PHASE_BLOCK, STORE=store,
            num_warps=ROTATE_WARPS)
        # the last token's turned key: its row of kr, back from halves to pairs
        final.k.copy_(torch.stack((kr[:, -1, :, :K // 2], kr[:, -1, :, K // 2:]),
                                  -1).flatten(-2))
        kept = dict(dtype=saved_dtype(q.dtype), device=q.device)
        hbuf = torch.empty(B * H, NC + 1, V, K, **kept)
        ybuf = torch.empty(B, T, H, V, **kept) if store else out
        chunk_states_kernel[(triton.cdiv(V, BV), H, B)](
            kr, args[2], *gates, *states[1:], final.ssm, final.v, hbuf, T, H, K, V, BV=BV,
            **tiles, **launch("train", q.dtype))
        BVO = value_block(V, CHUNK_BLOCK_V)
        chunk_out_kernel[(NC * triton.cdiv(V, BVO), H, B)](
            qr, kr, args[2], *gates, args[9], args[10], hbuf, out, ybuf, T, H, K, V, BV=BVO,
            STORE=store, **tiles, **flags, **launch("output", q.dtype))
    fallback = fallback_flag(out, *final)
    recurrent_forward(*args, states, out, final, when=fallback)
    if store:
        return out, final, Saved(phases.sums, hbuf, ybuf, fallback, qr, kr)
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
