# SPDX-License-Identifier: Apache-2.0
"""The sizing of random-drop tests (ffs.lab.binomial): a 20 % error in γ must leave the ±4σ band in
99.9 % of runs, checked against the exact binomial distribution."""

import math

import pytest

from ffs.lab import binomial


def cdf(k: float, n: int, p: float) -> float:
    """P(X <= k), X ~ Binomial(n, p), summed in logs."""
    k = math.floor(k)
    if k < 0:
        return 0.0
    total = 0.0
    for i in range(0, min(k, n) + 1):
        total += math.exp(
            math.lgamma(n + 1)
            - math.lgamma(i + 1)
            - math.lgamma(n - i + 1)
            + i * math.log(p)
            + (n - i) * math.log1p(-p)
        )
    return total


@pytest.mark.parametrize("slack", [0.0, 0.014])
@pytest.mark.parametrize("gamma", [1 / 2, 1 / 3, 1 / 5, 1 / 8])
def test_a_twenty_percent_error_fails_at_99_9_percent(gamma, slack):
    n = binomial.packets_to_tell(gamma, slack=slack)

    def worst_miss(n: int) -> float:
        lo, hi = binomial.bounds(n, gamma, slack=slack)
        return max(cdf(hi, n, q) - cdf(math.ceil(lo) - 1, n, q) for q in (0.8 * gamma, 1.2 * gamma))

    assert worst_miss(n) <= 0.001, (gamma, n, worst_miss(n))
    assert worst_miss(n - 1) > 0.001, (gamma, n)  # no packet more than the bound needs
    # and the band keeps the true γ (a false alarm below 1e-4)
    lo, hi = binomial.bounds(n, gamma, slack=slack)
    assert cdf(hi, n, gamma) - cdf(math.ceil(lo) - 1, n, gamma) >= 0.9999


def test_the_old_drop_test_could_not_tell():
    """Why the drop test needs more than 300 packets: n = 300 at γ = 1/8 accepts 0.049..0.20, so a
    γ 20 % high would pass in most runs."""
    lo, hi = binomial.bounds(300, 1 / 8)
    assert cdf(hi, 300, 0.15) - cdf(math.ceil(lo) - 1, 300, 0.15) > 0.9
