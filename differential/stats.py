"""Small exact statistics for the disagreement table: McNemar's exact test and Wilson
score intervals. Written out with math.comb so that kdiff needs no scipy."""
from __future__ import annotations

import math
from dataclasses import dataclass

# The 97.5th percentile of the standard normal: a two-sided 95% interval.
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Rate:
    """k of n, with its Wilson score interval (95%). `value` etc. are None when n == 0."""

    k: int
    n: int
    low: float | None
    high: float | None

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    def to_json(self) -> dict[str, float | int | None]:
        return {"k": self.k, "n": self.n, "rate": self.value, "ci95": [self.low, self.high]}

    def describe(self) -> str:
        if not self.n:
            return f"{self.k}/0"
        return (f"{self.k}/{self.n} = {100 * self.value:.1f}% "
                f"[{100 * self.low:.1f}, {100 * self.high:.1f}]")


def wilson(k: int, n: int, z: float = Z_95) -> Rate:
    """Wilson score interval for a binomial proportion k/n:
    (p + z^2/2n -+ z*sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n). Unlike the normal (Wald)
    interval it stays inside [0, 1] and is not degenerate at k = 0 or k = n, which is where
    disagreement counts usually sit."""
    if not 0 <= k <= n:
        raise ValueError(f"wilson: need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return Rate(k, n, None, None)
    p = k / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    denom = 1 + z2 / n
    return Rate(k, n, max(0.0, (centre - half) / denom), min(1.0, (centre + half) / denom))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar test on the discordant pairs b and c: under the null
    hypothesis (no direction is favoured) b ~ Binomial(b + c, 1/2); the p-value is twice the
    smaller tail, capped at 1. Exact integer arithmetic: the sum of binomial coefficients is
    an integer and 2^n a power of two, so the only rounding is the final division."""
    if b < 0 or c < 0:
        raise ValueError(f"mcnemar_exact: counts must be >= 0, got {b}, {c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)
