# SPDX-License-Identifier: Apache-2.0
"""Sizing the tests of a random drop (γ, spec §5.4): how many packets tell a forwarding rate from
one a given fraction away, with the ±4σ band every such test accepts (spec §11.2.9)."""

from __future__ import annotations

import math

Z_MISS = 3.0902  # the one-sided normal quantile of 0.999


def bounds(n: int, p: float, sigmas: float = 4.0, slack: float = 0.0) -> tuple[float, float]:
    """n·p ± `sigmas`·σ with σ = sqrt(n p (1 - p)), the centre widened by a relative `slack` either
    side (what a quantized p may be off by)."""
    s = math.sqrt(n * p * (1 - p))
    return n * p * (1 - slack) - sigmas * s, n * p * (1 + slack) + sigmas * s


def packets_to_tell(p: float, rel: float = 0.2, sigmas: float = 4.0, slack: float = 0.0) -> int:
    """The smallest n for which the band of `bounds` around n·p excludes a forwarding probability
    `rel` away from p (either side) in 99.9 % of runs: n·(|p - q| - slack·p) >= sigmas·σ(p) + Z_MISS·σ(q)
    per packet, σ(x) = sqrt(x (1 - x)), in the normal approximation, plus 5 % for its error
    at the tails (tests/unit/test_binomial.py checks the exact binomial)."""
    worst = 0
    for q in (p * (1 - rel), min(p * (1 + rel), 1.0)):
        if q == p:
            continue
        k = (sigmas * math.sqrt(p * (1 - p)) + Z_MISS * math.sqrt(q * (1 - q))) / (abs(p - q) - slack * p)
        worst = max(worst, math.ceil(1.05 * k * k))
    return worst
