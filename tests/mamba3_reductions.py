"""Both reductions of a phase mod 2 pi (kdiff.kernels.mamba3.ops: the exact fmod's
mod_two_pi, and mod_two_pi_near) over one tensor, for tests/test_mamba3.py: interpreted
there, compiled in a fresh interpreter on CUDA (run as a script)."""
from __future__ import annotations

import json
import math

import torch
import triton
import triton.language as tl

from kdiff.kernels.mamba3.ops import mod_two_pi, mod_two_pi_near


@triton.jit
def reductions_kernel(x, exact, near, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    value = tl.load(x + i, mask=i < n, other=0.0)
    tl.store(exact + i, mod_two_pi(value), mask=i < n)
    tl.store(near + i, mod_two_pi_near(value), mask=i < n)


def reduction_inputs() -> torch.Tensor:
    """fp64 values within mod_two_pi_near's range |x| < 2^40: random at every scale down to
    2^-60, every multiple k 2 pi (as doubles, |k| <= 300) and its two neighbours, where a
    wrong quotient or a zero's sign would show, signed zeros, subnormals, and NaN."""
    gen = torch.Generator().manual_seed(14)
    n = 1 << 15
    scale = torch.exp2(torch.randint(-60, 40, (n,), generator=gen).double())
    random = (torch.rand(n, dtype=torch.float64, generator=gen) * 2 - 1) * scale
    turns = torch.arange(-300, 301, dtype=torch.float64) * (2 * math.pi)
    around = torch.cat([turns, turns.nextafter(turns + 1), turns.nextafter(turns - 1)])
    special = torch.tensor([0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e-300, 2.0**40 - 1,
                            -(2.0**40 - 1), math.nan], dtype=torch.float64)
    return torch.cat([random, around, special])


def reductions(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mod_two_pi(x), mod_two_pi_near(x)) on x's device."""
    exact, near = torch.empty_like(x), torch.empty_like(x)
    reductions_kernel[(triton.cdiv(x.numel(), 1024),)](x, exact, near, x.numel(), BLOCK=1024)
    return exact, near


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bit for bit, signed zeros included; NaN where the other is NaN (any payload)."""
    nan = a.isnan()
    return bool(torch.equal(nan, b.isnan())
                and torch.equal(a[~nan].view(torch.int64), b[~nan].view(torch.int64)))


if __name__ == "__main__":
    x = reduction_inputs().cuda()
    exact, near = reductions(x)
    reference = torch.remainder(x, 2 * math.pi)
    print(json.dumps([same_bits(exact, near), same_bits(reference, near)]))
