# SPDX-License-Identifier: Apache-2.0
"""Per-stream results that stay in the partitions (`ffs.lab.network.part.Part.hold`): their
count, sum, extremes, exact order statistics and point masses, asked of every partition and
combined here, so the driver never holds one value per stream (a billion streams on the whole AS
graph). An order statistic is found by bisection over the bit patterns of the (non-negative)
values, each step one count per partition of the values at or below a candidate: 64 steps at most,
for any number of ranks at once."""

from __future__ import annotations

import numpy as np

from ffs.lab.network.pool import Pool


def _bits(x: np.ndarray | float) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).view(np.int64)


def _value(b: np.ndarray) -> np.ndarray:
    return np.asarray(b, dtype=np.int64).view(np.float64)


class Distribution:
    """One held result, `name`, over all partitions of `pool`."""

    def __init__(self, pool: Pool, name: str, parts: list[tuple[int, float, float, float]]) -> None:
        self.pool, self.name = pool, name
        self.n = sum(p[0] for p in parts)
        self.total = float(sum(p[1] for p in parts))
        self.min = min(p[2] for p in parts if p[0])
        self.max = max(p[3] for p in parts if p[0])
        if self.min < 0:
            raise ValueError(f"{name}: the bisection over bit patterns needs values >= 0")

    @property
    def mean(self) -> float:
        return self.total / self.n

    def masses(self, decimals: int) -> dict[float, int]:
        """How many values there are at each value rounded to `decimals`."""
        out: dict[float, int] = {}
        for values, counts in self.pool.call("masses", self.name, decimals):
            for v, c in zip(values.tolist(), counts.tolist(), strict=True):
                out[v] = out.get(v, 0) + c
        return out


def order_statistics(pool: Pool, wanted: list[tuple[Distribution, np.ndarray]]) -> list[np.ndarray]:
    """For each (distribution, 0-based ranks): the values at those ranks of its sorted whole. One
    bisection for all of them, each step one call to every partition."""
    names = [d.name for d, _ in wanted]
    want = [np.asarray(r, dtype=np.int64) + 1 for _, r in wanted]  # values at or below the answer
    lo = [np.full(len(w), _bits(d.min), dtype=np.int64) for (d, _), w in zip(wanted, want, strict=True)]
    hi = [np.full(len(w), _bits(d.max), dtype=np.int64) for (d, _), w in zip(wanted, want, strict=True)]
    while any(np.any(a < b) for a, b in zip(lo, hi, strict=True)):
        mid = [a + (b - a) // 2 for a, b in zip(lo, hi, strict=True)]
        counts = pool.call("count_at_most", names, [_value(m) for m in mid])
        for k in range(len(wanted)):
            ok = np.sum([c[k] for c in counts], axis=0) >= want[k]
            hi[k], lo[k] = np.where(ok, mid[k], hi[k]), np.where(ok, lo[k], mid[k] + 1)
    return [_value(b) for b in hi]


def describe(
    pool: Pool, dists: list[Distribution], q: np.ndarray, points: int
) -> list[tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]]:
    """Per distribution: its quantiles at `q` (as numpy's default, linear: between the order
    statistics around q · (n − 1)) and a CDF to draw, `points` order statistics at evenly spaced
    ranks (every value when there are fewer) with the fraction of values at or below each."""
    plans = []
    for d in dists:
        at = np.asarray(q, dtype=float) * (d.n - 1)
        below = np.floor(at).astype(np.int64)
        above = np.minimum(below + 1, d.n - 1)
        rank = np.arange(d.n) if d.n <= points else np.linspace(0, d.n - 1, points).astype(np.int64)
        plans.append((below, above, at - below, rank))
    values = order_statistics(pool, [(d, np.r_[b, a, r]) for d, (b, a, _, r) in zip(dists, plans, strict=True)])
    out = []
    for d, (below, _, t, rank), v in zip(dists, plans, values, strict=True):
        a, b = v[: len(below)], v[len(below) : 2 * len(below)]
        diff = b - a
        quantiles = np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)
        out.append((quantiles, (v[2 * len(below) :], (rank + 1) / d.n)))
    return out
