# SPDX-License-Identifier: Apache-2.0
"""The network-utilization study (FFS §VII-B, Figure 4) and the incremental-deployment study
(Appendix C, Figure 10) on an AS graph.

Every AS is a node with one local interface and one interface per inter-domain link. Its fairness
matrix follows §VII-B: M(local, j) = 10 % of C_j; M(i, j) = C_i (the capacity of the link behind
ingress i) for every other link; if a column sums to less than C_j the rest goes to the local
interface, if it sums to more every entry is scaled down to fit. T_j = C_j.

A fraction of source–destination pairs send on shortest paths, kept as one tree per source
(`ffs.lab.network.trees`) in the partitions of a pool (`ffs.lab.network.pool`). FFS: sources
start at their maximum rate (the capacity of their first link) and the exact allocation (Eq. 1,
Eq. 2 with τ per egress, to a fixed point: `ffs.lab.network.fixedpoint`) cuts them at congested
egresses; optionally sources then reduce their rate to what arrived and the allocation is
recomputed (`ffs_allocation`). The two reservation baselines of Figure 4 are computed on the same
paths (`FFSResult.static`: GMA, `helia_sources`), and the deployment study on the same paths
(`deployed`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ffs.lab.network.fixedpoint import Checkpoint, Driver, Rounds
from ffs.lab.network.graph import ASGraph
from ffs.lab.network.pool import Pool
from ffs.lab.network.trees import rng_after_pairs


def build(
    pool: Pool, g: ASGraph, chunk: int | None = None, progress: Callable[[int], None] = lambda done: None
) -> dict[str, float]:
    """Every partition builds the trees of its sources, `chunk` sources a call (all partitions at
    once; `progress` gets the sources done), then the study's pairs and their M reach them all."""
    chunk = chunk or max(1, min(256, 4_000_000 // g.n))
    ranges = pool.ranges
    done = 0
    for start in range(0, max(hi - lo for lo, hi in ranges), chunk):
        spans = [(min(lo + start, hi), min(lo + start + chunk, hi)) for lo, hi in ranges]
        pool.call_each("build", spans)
        done += sum(b - a for a, b in spans)
        progress(done)
    own = pool.call("finish")
    keys = np.unique(np.concatenate(own))
    pool.pairs = [np.searchsorted(keys, k) for k in own]  # each partition's pairs among all
    pool.call("set_pairs")
    sizes = pool.call("sizes")
    return {
        "streams": sum(s["streams"] for s in sizes),
        "stream_hops": sum(s["stream_hops"] for s in sizes),
        "tree_hops": sum(s["edges"] for s in sizes),
        "pairs": len(keys),
        "len_max": max(s["len_max"] for s in sizes),
    }


@dataclass
class FFSResult:
    rate: np.ndarray  # delivered per stream, bit/s
    static: np.ndarray  # per stream: min over its hops of f (Eq. 1) as the sources start (GMA)
    rounds: int  # source rounds
    hop_rounds: int  # allocator rounds in all
    residual: float  # largest relative change of a source rate in the last round (inf: not checked)
    resumed_at: int  # allocator rounds a checkpoint had already done (0: none)


def ffs_allocation(
    pool: Pool,
    g: ASGraph,
    max_rounds: int = 1,
    rel_tol: float = 1e-6,
    progress: Callable[[str], None] | None = None,
    checkpoint: Checkpoint | None = None,
) -> FFSResult:
    """§VII-B's rounds: sources start at their maximum rate with rf = 1 labels; the exact allocation
    (a fixed point of Eq. 1 and Eq. 2 over all hops, 1e-9 relative) cuts them at congested
    egresses. With `max_rounds` > 1 (the pool built with chains) each source then sends what
    arrived (its rate reduced to the fair rate at its bottleneck, labels following) and the
    allocation is recomputed, until no source rate moves by more than `rel_tol`. Rates only go
    down, as the paper describes; on generated graphs of 200-1,000 ASes the second round moved no
    source by more than 1e-7, so one round is the default (each costs a full fixed point)."""
    driver = Driver(pool, np.r_[g.capacity, g.capacity], progress)
    saved = checkpoint.load(pool) if checkpoint else None
    st = driver.state = saved or Rounds()
    resumed_at = st.rounds if saved else 0
    if checkpoint:
        checkpoint.last = time.monotonic()

    def on_round() -> None:
        if checkpoint and time.monotonic() - checkpoint.last >= checkpoint.every_s:
            checkpoint.save(pool, st)
            checkpoint.last = time.monotonic()

    while True:
        k = st.source_round
        if not st.solved:
            driver.solve(on_round)
            if k == 1:
                pool.call("keep_static")
        if max_rounds == 1:
            break
        moved = max(pool.call("reduce_demand"))
        driver.sums = None  # the sources' rates moved
        if k > 1:
            st.residual = moved
            if progress:
                progress(f"source round {k}: rates moved {moved:.1e}")
        if st.residual <= rel_tol or k == max_rounds:
            break
        st.source_round += 1
        st.solved = False
        on_round()
    rate = np.concatenate(pool.call("rates"))
    static = np.concatenate(pool.call("static_share_kept"))
    return FFSResult(rate, static, st.source_round, st.rounds, st.residual, resumed_at)


def helia_sources(pool: Pool) -> np.ndarray:
    """Helia's per-AS allocation (Flyovers; FFS Table I: fairness "per active AS"): every AS divides
    each egress link's capacity equally among the source ASes with a reservation through it, and a
    source AS divides its part equally among its own paths through that egress. Unused allocations
    are not passed to others. The path gets min(max rate, its smallest per-hop allocation)
    (`Part.helia`). (Our reading: the paper gives the model's name and its citation, not the
    formula.) Here: the count of source ASes per egress, over all partitions."""
    out: np.ndarray = np.sum(pool.call("helia_sources"), axis=0)
    return out


def deployed(n: int, fractions: list[float], seed: int) -> list[tuple[float, np.ndarray]]:
    """Appendix C: per deployed fraction, the ASes that run FFS, sampled at random (the generator
    as the pairs left it); a path's security effectiveness is the fraction of its on-path ASes,
    source and destination included, among them (`Part.deployment`)."""
    rng = rng_after_pairs(n, seed)
    out = []
    for frac in fractions:
        if not 0 <= frac <= 1:
            raise ValueError(f"deployed fraction must be in [0, 1], got {frac}")
        on = np.zeros(n, dtype=bool)
        on[rng.choice(n, size=round(frac * n), replace=False)] = True
        out.append((frac, on))
    return out
