# SPDX-License-Identifier: Apache-2.0
"""Sizing the tests of a random drop (γ, spec §5.4): how many packets tell a forwarding rate from
one a given fraction away, with the ±4σ band every such test accepts (spec §11.2.9)."""

from __future__ import annotations

import math

Z_MISS = 3.0902  # the one-sided normal quantile of 0.999
MISS = 0.001  # a forwarding rate `rel` away may stay inside the band in this fraction of runs


def bounds(n: int, p: float, sigmas: float = 4.0, slack: float = 0.0) -> tuple[float, float]:
    """n·p ± `sigmas`·σ with σ = sqrt(n p (1 - p)), the centre widened by a relative `slack` either
    side (what a quantized p may be off by)."""
    s = math.sqrt(n * p * (1 - p))
    return n * p * (1 - slack) - sigmas * s, n * p * (1 + slack) + sigmas * s


def inside(n: int, q: float, lo: float, hi: float) -> float:
    """P(lo <= X <= hi) for X ~ Binomial(n, q), the band's terms summed in logs."""
    first, last = max(0, math.ceil(lo)), min(n, math.floor(hi))
    c, lq, l1q = math.lgamma(n + 1), math.log(q), math.log1p(-q)
    return sum(
        math.exp(c - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lq + (n - i) * l1q)
        for i in range(first, last + 1)
    )


def _normal_estimate(p: float, q: float, sigmas: float, slack: float) -> float:
    """n·(|p - q| - slack·p) = sigmas·σ(p) + Z_MISS·σ(q) per packet, σ(x) = sqrt(x (1 - x)): the
    normal approximation's n, where the exact search starts."""
    k = (sigmas * math.sqrt(p * (1 - p)) + Z_MISS * math.sqrt(q * (1 - q))) / (abs(p - q) - slack * p)
    return k * k


def packets_to_tell(p: float, rel: float = 0.2, sigmas: float = 4.0, slack: float = 0.0) -> int:
    """An n for which the band of `bounds` around n·p holds a forwarding probability `rel` away from
    p (either side) in at most MISS of runs, by the exact binomial distribution: the first from 0.9
    of the normal approximation's n up (tests/unit/test_binomial.py checks it against its own sums,
    and that n - 1 fails)."""
    qs = [q for q in (p * (1 - rel), min(p * (1 + rel), 1.0)) if q != p]
    n = max(1, math.floor(0.9 * max(_normal_estimate(p, q, sigmas, slack) for q in qs)))
    while any(inside(n, q, *bounds(n, p, sigmas, slack)) > MISS for q in qs):
        n += 1
    return n
