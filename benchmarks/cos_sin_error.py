"""The error of kernels/mamba3's cos_sin (ops.py) against float64 cos and sin, in units of
fp32's u = 2^-24, computed with numpy as the kernel computes it: the quarter turn taken off
in float64, then Cephes' polynomials in float32, each product rounded (the interpreter, or a
compiler that keeps them apart) or each multiply-add fused (what a GPU compiler may emit).

    python benchmarks/cos_sin_error.py [--points 4194304]
"""
from __future__ import annotations

import argparse

import numpy as np

F = np.float32
SIN_P = (F(-1.6666654611e-1), F(8.3321608736e-3), F(-1.9515295891e-4))
COS_Q = (F(4.166664568298827e-2), F(-1.388731625493765e-3), F(2.443315711809948e-5))
U = 2.0 ** -24


def fma(a, b, c):
    """a b + c rounded once to float32."""
    return (np.float64(a) * np.float64(b) + np.float64(c)).astype(F)


def polynomials(r, fused: bool):
    """cos and sin of float32 r in [-pi/4, pi/4], in ops.cos_sin's association."""
    z = r * r
    if fused:
        s = fma(fma(fma(SIN_P[2], z, SIN_P[1]), z, SIN_P[0]) * z, r, r)
        c = fma(fma(fma(COS_Q[2], z, COS_Q[1]), z, COS_Q[0]) * z, z, F(-0.5) * z) + F(1.0)
    else:
        s = ((SIN_P[2] * z + SIN_P[1]) * z + SIN_P[0]) * z * r + r
        c = ((COS_Q[2] * z + COS_Q[1]) * z + COS_Q[0]) * z * z - F(0.5) * z + F(1.0)
    return c, s


def cos_sin(theta, fused: bool):
    k = np.floor(theta * (2 / np.pi) + 0.5)
    c, s = polynomials((theta - k * (np.pi / 2)).astype(F), fused)
    quadrant = k.astype(np.int64) & 3
    cos = np.select([quadrant == 0, quadrant == 1, quadrant == 2], [c, -s, -c], s)
    sin = np.select([quadrant == 0, quadrant == 1, quadrant == 2], [s, c, -s], -c)
    return cos, sin


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=1 << 22)
    n = ap.parse_args().points
    rng = np.random.default_rng(0)
    r = np.concatenate([np.linspace(-np.pi / 4, np.pi / 4, n),
                        rng.uniform(-np.pi / 4, np.pi / 4, n)]).astype(F)
    quarters = np.arange(9) * (np.pi / 4)
    theta = np.concatenate([rng.uniform(0, 2 * np.pi, n), np.linspace(0, 2 * np.pi, n),
                            quarters, np.nextafter(quarters, 0), np.nextafter(quarters, 7)])
    theta = theta[(theta >= 0) & (theta <= 2 * np.pi)]
    for fused in (False, True):
        how = "fused" if fused else "rounded"
        c, s = polynomials(r, fused)
        exact = np.float64(r)
        print(f"polynomials on [-pi/4, pi/4], products {how}: "
              f"cos {np.abs(c - np.cos(exact)).max() / U:.2f}u, "
              f"sin {np.abs(s - np.sin(exact)).max() / U:.2f}u over {r.size} points")
        cos, sin = cos_sin(theta, fused)
        print(f"cos_sin on [0, 2 pi], products {how}: "
              f"cos {np.abs(cos - np.cos(theta)).max() / U:.2f}u, "
              f"sin {np.abs(sin - np.sin(theta)).max() / U:.2f}u over {theta.size} points")


if __name__ == "__main__":
    main()
