"""Tile helpers of the Mamba-3 kernels: the rotary phase, the key-pair loads, and the
reference's activations in the reference's association (reference.py)."""
from __future__ import annotations

import triton
import triton.language as tl

PI = 3.141592653589793
TWO_PI = 6.283185307179586


@triton.jit
def tanh64(x):
    """tanh in fp64, sign(x) (1 - e) / (1 + e) with e = exp(-2|x|): no overflow, +-1 at
    +-Inf, NaN at NaN. The phase step pi tanh(x) dt then carries an absolute error near
    2^-52, far below the fp32 rotation it feeds."""
    x = x.to(tl.float64)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def advance_phase(theta, angle, dt):
    """(theta + pi tanh(angle) dt) mod 2 pi, in fp64 (torch.remainder's floor convention)."""
    theta = theta + PI * tanh64(angle) * dt.to(tl.float64)
    return theta - TWO_PI * tl.floor(theta / TWO_PI)


@triton.jit
def sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def silu(x):
    """x sigmoid(x): F.silu's NaN at -Inf (-Inf times 0) as torch's x / (1 + exp(-x))."""
    return x * sigmoid(x)


@triton.jit
def turn(x0, x1, cos, sin):
    """The pair (x0, x1) turned by the angle whose cosine and sine are given."""
    return x0 * cos - x1 * sin, x0 * sin + x1 * cos


@triton.jit
def pair_offsets(K, BK2: tl.constexpr):
    """Pair indices j < BK2 and their mask j < K / 2: element 2j is a pair's first, 2j + 1
    its second."""
    j = tl.arange(0, BK2)
    return j, j < K // 2
