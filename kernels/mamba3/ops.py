"""Tile helpers of the Mamba-3 kernels: the rotary phase, the key-pair loads, and the
reference's activations in the reference's association (reference.py)."""
from __future__ import annotations

import os

import triton
import triton.language as tl
from triton.language.extra import libdevice

# constexpr: a compiled kernel reads no other globals (the interpreter does not check)
PI = tl.constexpr(3.141592653589793)
TWO_PI = tl.constexpr(6.283185307179586)


@triton.jit
def tanh64(x):
    """tanh in fp64 to a relative error near 2^-45 at every size: sign(x) (1 - e) / (1 + e)
    with e = exp(-2|x|) (no overflow, +-1 at +-Inf, NaN at NaN) from |x| = 2^-8 on, where
    1 - e loses at most 7 bits; below, x (1 - x^2/3 + 2 x^4/15), whose first omitted term
    17 x^7 / 315 is under 2^-52 x. (1 - e alone was 0 at |x| = 1e-19, where tanh(x) = x
    sets the phase's sign: kdiff PRC-03 at inputs x 1e-19.)"""
    x = x.to(tl.float64)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    x2 = x * x
    small = x * (1.0 - x2 / 3.0 + x2 * x2 * (2.0 / 15.0))
    return tl.where(tl.abs(x) < 0.00390625, small, tl.where(x < 0, -t, t))


# The exact fmod. The interpreter computes a float `%` with numpy's exact fmod, but compiled,
# `%` is LLVM's frem, which NVPTX lowers to x - y trunc(x / y): on the H200 a phase of 1e36
# came out as -5.5e19 (kdiff PRC-03, bf16 inputs x 3.4e36). libdevice's fmod is exact (0 ulp)
# and exists only compiled.
if os.environ.get("TRITON_INTERPRET") == "1":
    @triton.jit
    def fmod_two_pi(x):
        return x % TWO_PI
else:
    @triton.jit
    def fmod_two_pi(x):
        return libdevice.fmod(x, tl.zeros_like(x) + TWO_PI)


@triton.jit
def mod_two_pi(x):
    """x mod 2 pi in [0, 2 pi), exactly as torch.remainder: the exact fmod, plus 2 pi where it
    is negative. (x - 2 pi floor(x / 2 pi) rounds the product: at |x| = 1e19, fp64, it was
    off by thousands, and the phase with it.)"""
    r = fmod_two_pi(x)
    return tl.where(r < 0, r + TWO_PI, r)


@triton.jit
def negative_zero(like):
    """-0.0 shaped as `like`. Compiled (Triton 3.6), a -0.0 literal comes out as +0.0 (PTX
    `selp.b64 %rd, 0, ...`); 0 times -1 keeps the sign."""
    return tl.zeros_like(like) * -1.0


INV_TWO_PI = tl.constexpr(0.15915494309189535)


@triton.jit
def mod_two_pi_near(x):
    """mod_two_pi(x), bitwise, for |x| < 2^40 (NaN gives NaN), in a few fmas instead of the
    exact fmod's loop. k = floor(x / 2 pi) rounded is off by at most one there (x / 2 pi
    errs by under 2^40 u64 / 2 pi < 1e-5), and the sign of x - k 2 pi, taken by one fma, is
    the exact value's (rounding keeps a sign; the value is 0 or at least a unit of x's or 2 pi
    k's last place), so k is corrected exactly. Then x - k 2 pi by one fma is the exact value
    rounded once: for x >= 0 the exact fmod (representable), for x < 0 fmod(x) + 2 pi
    rounded once, as mod_two_pi forms it. A zero takes x's sign, as fmod's."""
    # 2 pi as an fp64 tensor: tl.fma takes a float constant as fp32 (6.2831854820251465,
    # compiled; on the H200 every reduction then differed from the fmod's)
    two_pi = tl.zeros_like(x) + TWO_PI
    k = tl.floor(x * INV_TWO_PI)
    k = tl.where(tl.fma(-k, two_pi, x) < 0, k - 1.0, k)
    k = tl.where(tl.fma(-(k + 1.0), two_pi, x) >= 0, k + 1.0, k)
    r = tl.fma(-k, two_pi, x)
    return tl.where(r == 0, x * 0.0, r)


# Cephes' single-precision kernels of sin and cos on [-pi/4, pi/4] (sinf.c: x + x z P(z),
# 1 - z / 2 + z^2 Q(z), z = x^2).
SIN_P0 = tl.constexpr(-1.6666654611e-1)
SIN_P1 = tl.constexpr(8.3321608736e-3)
SIN_P2 = tl.constexpr(-1.9515295891e-4)
COS_Q0 = tl.constexpr(4.166664568298827e-2)
COS_Q1 = tl.constexpr(-1.388731625493765e-3)
COS_Q2 = tl.constexpr(2.443315711809948e-5)
HALF_PI = tl.constexpr(1.5707963267948966)
TWO_OVER_PI = tl.constexpr(0.6366197723675814)


@triton.jit
def cos_sin(theta):
    """cos and sin in fp32 of an fp64 phase in [0, 2 pi], within 2u absolute (u = 2^-24).
    The quarter turn k nearest theta is taken off in fp64, r = theta - k pi/2 in [-pi/4,
    pi/4] (off by under 1e-15: k <= 4), then r rounded to fp32 moves by at most u pi/4 <
    0.8u, and cos and sin are 1-Lipschitz; Cephes' polynomials err by at most 1u there
    (benchmarks/cos_sin_error.py, products rounded or fused: at most 0.99u for cos and 0.80u
    for sin over 8.4M points of [-pi/4, pi/4]; 1.32u through this function on [0, 2 pi]). The quadrant's swaps and signs are exact. (libdevice's cosf and sinf
    of the phase rounded to fp32 were within 6u, and inlined per element with their slow
    path: on sm_90, 6,600 instructions and local memory in rotate_fwd_kernel.) NaN gives
    NaN."""
    k = tl.floor(theta * TWO_OVER_PI + 0.5)
    r = (theta - k * HALF_PI).to(tl.float32)
    z = r * r
    s = ((SIN_P2 * z + SIN_P1) * z + SIN_P0) * z * r + r
    c = ((COS_Q2 * z + COS_Q1) * z + COS_Q0) * z * z - 0.5 * z + 1.0
    quadrant = tl.where(k == k, k, 0.0).to(tl.int32) & 3  # NaN: r is NaN, any quadrant
    cos = tl.where(quadrant == 0, c, tl.where(quadrant == 1, -s, tl.where(quadrant == 2, -c, s)))
    sin = tl.where(quadrant == 0, s, tl.where(quadrant == 1, c, tl.where(quadrant == 2, -s, -c)))
    return cos, sin


@triton.jit
def phase_step(angle, dt):
    """pi tanh(angle) dt, in fp64, in the reference's association: a token's turn."""
    return PI * tanh64(angle) * dt.to(tl.float64)


@triton.jit
def advance_phase(theta, angle, dt):
    """(theta + pi tanh(angle) dt) mod 2 pi, in fp64, in the reference's association."""
    return mod_two_pi(theta + phase_step(angle, dt))


@triton.jit
def sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def silu(x):
    """x sigmoid(x): F.silu's NaN at -Inf (-Inf times 0) as torch's x / (1 + exp(-x))."""
    return x * sigmoid(x)


@triton.jit
def turn(x0, x1, cos, sin, turned):
    """The pair (x0, x1) turned by the angle whose cosine and sine are given, where `turned`
    (the pairs with an angle); the others as they are, as the reference passes them (turned
    by a zero angle, an Inf in x1 would make x0 * 1 - x1 * 0 NaN)."""
    return (tl.where(turned, x0 * cos - x1 * sin, x0),
            tl.where(turned, x0 * sin + x1 * cos, x1))


@triton.jit
def pair_offsets(K, BK2: tl.constexpr):
    """Pair indices j < BK2 and their mask j < K / 2: element 2j is a pair's first, 2j + 1
    its second."""
    j = tl.arange(0, BK2)
    return j, j < K // 2


@triton.jit
def load_halves(ptr, off, j, mask):
    """The [K] row at `off` as its two halves of key pairs (elements 2j and 2j + 1), fp32."""
    return (tl.load(ptr + off + 2 * j, mask=mask, other=0.0).to(tl.float32),
            tl.load(ptr + off + 2 * j + 1, mask=mask, other=0.0).to(tl.float32))


@triton.jit
def state_tile(b, h, i_v, H, K, V, BK2: tl.constexpr, BV: tl.constexpr):
    """A program's share of head h of sequence b: bh = b H + h; the key pairs j (mask jm);
    the value rows cv of block i_v (mask vm); and its [BV, BK2] state tile's mask and the
    offsets of the tile's first halves in [B, H, V, K]."""
    bh = b.to(tl.int64) * H + h
    j, jm = pair_offsets(K, BK2)
    cv = i_v * BV + tl.arange(0, BV)
    vm = cv < V
    return bh, j, jm, cv, vm, vm[:, None] & jm[None, :], \
        bh * V * K + cv[:, None] * K + 2 * j[None, :]


@triton.jit
def load_pair_rows(ptr, row_base, rm, K, BK2: tl.constexpr):
    """The [rows, K] rows at offsets row_base [rows, 1] (mask rm) as their two halves of key
    pairs (fp32), each row loaded whole (contiguous, so in wide loads) and split in
    registers, not element by element at stride 2."""
    c = tl.arange(0, 2 * BK2)
    rows = tl.load(ptr + row_base + c[None, :], mask=rm[:, None] & (c < K)[None, :],
                   other=0.0).to(tl.float32)
    return tl.split(tl.reshape(rows, (rows.shape[0], BK2, 2)))


@triton.jit
def store_pair_rows(ptr, row_base, rm, K, first, second):
    """load_pair_rows' inverse: the halves joined into whole rows, stored in ptr's dtype."""
    joined = tl.join(first, second)
    rows = tl.reshape(joined, (joined.shape[0], 2 * joined.shape[1]))
    c = tl.arange(0, 2 * joined.shape[1])
    tl.store(ptr + row_base + c[None, :], rows.to(ptr.dtype.element_ty),
             mask=rm[:, None] & (c < K)[None, :])


@triton.jit
def load_state_rows(ptr, bh, cv, vm, V, K, BK2: tl.constexpr):
    """The [BV, K] rows cv of state bh of a [B * H, V, K] tensor as its two halves of key
    pairs (fp32)."""
    return load_pair_rows(ptr, ((bh * V + cv) * K)[:, None], vm, K, BK2)


@triton.jit
def store_state_rows(ptr, bh, cv, vm, V, K, first, second):
    """load_state_rows' inverse, in ptr's dtype."""
    store_pair_rows(ptr, ((bh * V + cv) * K)[:, None], vm, K, first, second)


@triton.jit
def head_tile(b, h, i_v, H, G, K, V, A, BK2: tl.constexpr, BV: tl.constexpr):
    """state_tile's share, with head h's key head hq of Hq (G heads share one) and the pairs
    with an angle (am)."""
    bh, j, jm, cv, vm, sm, soff = state_tile(b, h, i_v, H, K, V, BK2, BV)
    return bh, h // G, H // G, j, jm, j < A, cv, vm, sm, soff


@triton.jit
def masked_sum(x, mask, axis: tl.constexpr):
    """fp64 sum along `axis` of x where `mask` holds: padded rows and columns drop out (they
    would meet a non-finite value, 0 * Inf, that the reference never forms), and no fp32
    partial sum can overflow where the exact sum is finite."""
    return tl.sum(tl.where(mask, x, 0.0).to(tl.float64), axis)
