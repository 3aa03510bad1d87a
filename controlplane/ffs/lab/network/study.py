# SPDX-License-Identifier: Apache-2.0
"""The network-utilization study (FFS §VII-B, Figure 4) and the incremental-deployment study
(Appendix C, Figure 10) on an AS graph.

Every AS is a node with one local interface and one interface per inter-domain link. Its fairness
matrix follows §VII-B: M(local, j) = 10 % of C_j; M(i, j) = C_i (the capacity of the link behind
ingress i) for every other link; if a column sums to less than C_j the rest goes to the local
interface, if it sums to more every entry is scaled down to fit. T_j = C_j.

A fraction of source–destination pairs send on shortest paths. FFS: sources start at their maximum
rate (the capacity of their first link) and the exact allocation (`ffs.allocator.solve`: Eq. 1,
Eq. 2 with τ per egress, to a fixed point) cuts them at congested egresses; optionally sources then
reduce their rate to what arrived and the allocation is recomputed (`ffs_allocation`). The two
reservation baselines of Figure 4 are computed on the same paths (`gma_static`, `helia_per_as`),
and the deployment study on the same paths (`deployment`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from ffs.allocator import INF, HopArrays, solve
from ffs.lab.network.graph import ASGraph

LOCAL_SHARE = 0.10  # §VII-B: M(local, j) = 10 % of the egress capacity
DAMPING = 0.7  # τ steps of the allocator rounds (`ffs.allocator.solve`): same fixed point, fewer rounds


@dataclass
class Paths:
    """The chosen streams' AS paths: `nodes[s, 0..length[s]]` (padded with -1), source first."""

    src: np.ndarray
    dst: np.ndarray
    nodes: np.ndarray
    length: np.ndarray  # links on the path (hops), ≥ 1


def choose_pairs(n: int, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Every node sends to round(fraction · (n − 1)) others, chosen uniformly (§VII-B: 20 %)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"pair fraction must be in (0, 1], got {fraction}")
    k = max(1, round(fraction * (n - 1)))
    # a random ranking of the other nodes per source; the k first are its destinations
    keys = rng.random((n, n))
    np.fill_diagonal(keys, np.inf)
    dst = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < n - 1 else np.argsort(keys, axis=1)[:, :k]
    src = np.repeat(np.arange(n), k)
    return src, dst.ravel()


def shortest_paths(g: ASGraph, src: np.ndarray, dst: np.ndarray) -> Paths:
    """Shortest (fewest-link) paths, one BFS tree per source (scipy, in C), unwound for every
    pair at once."""
    adj = csr_matrix((np.ones(2 * len(g.u)), (np.r_[g.u, g.v], np.r_[g.v, g.u])), shape=(g.n, g.n))
    sources = np.unique(src)
    dist, pred = shortest_path(adj, unweighted=True, directed=False, return_predecessors=True, indices=sources)
    row = np.searchsorted(sources, src)
    d = dist[row, dst]
    keep = np.isfinite(d)  # pairs in different components have no path
    src, dst, row, length = src[keep], dst[keep], row[keep], d[keep].astype(np.intp)
    width = int(length.max()) + 1 if len(length) else 1
    nodes = np.full((len(src), width), -1, dtype=np.intp)
    nodes[np.arange(len(src)), length] = dst
    for pos in range(width - 1, 0, -1):
        act = np.flatnonzero(length >= pos)
        nodes[act, pos - 1] = pred[row[act], nodes[act, pos]]
    return Paths(src, dst, nodes, length)


@dataclass
class Network:
    """The stream-hops of the chosen paths with their pairs, egresses, M and T (§VII-B matrices)."""

    hops: HopArrays
    max_rate: np.ndarray  # per stream: its first link's capacity
    in_link: np.ndarray  # per hop: the directed link it arrives on, -1 at the source (local)
    out_link: np.ndarray  # per hop: the directed link it leaves on (= its egress)
    link_cap: np.ndarray  # per directed link
    node: np.ndarray  # per hop: the AS


def build(g: ASGraph, paths: Paths) -> Network:
    """Directed link k (u→v) is k for the k-th edge, k + E for its reverse; each is an egress of its
    tail AS. A hop's pair is (ingress link or the AS's local interface, egress link)."""
    n_e = len(g.u)
    key = np.r_[g.u * g.n + g.v, g.v * g.n + g.u]  # (tail, head) -> directed link id
    order = np.argsort(key)
    sorted_key = key[order]
    link_cap = np.r_[g.capacity, g.capacity]
    n_s, width = paths.nodes.shape
    k = np.arange(width - 1)
    valid = k[None, :] < paths.length[:, None]  # hop k from nodes[k] to nodes[k + 1]
    stream = np.broadcast_to(np.arange(n_s)[:, None], valid.shape)[valid]
    tail = paths.nodes[:, :-1][valid]
    head = paths.nodes[:, 1:][valid]
    out_link = order[np.searchsorted(sorted_key, tail * g.n + head)]
    first = np.r_[True, stream[1:] != stream[:-1]]
    in_link = np.r_[-1, out_link[:-1]]
    in_link[first] = -1
    # pairs: ingress code (a directed link, or 2E + AS for the local interface) × egress link
    ingress = np.where(in_link >= 0, in_link, 2 * n_e + tail)
    pair_key = ingress.astype(np.int64) * (2 * n_e) + out_link
    pair_keys, pair = np.unique(pair_key, return_inverse=True)
    p_in = pair_keys // (2 * n_e)
    p_out = pair_keys % (2 * n_e)
    share = fairness_share(g, p_in, p_out, link_cap)
    hops = HopArrays(stream, pair.astype(np.intp), out_link.astype(np.intp), share, link_cap)
    return Network(hops, link_cap[out_link[first]], in_link, out_link, link_cap, tail)


def fairness_share(g: ASGraph, p_in: np.ndarray, p_out: np.ndarray, link_cap: np.ndarray) -> np.ndarray:
    """M(i, j) for the pairs (ingress code, egress link) as §VII-B builds each AS's matrix."""
    n_e = len(g.u)
    tails = np.r_[g.u, g.v]
    cap_sum = np.bincount(tails, weights=link_cap, minlength=g.n)  # Σ C over an AS's links
    c_j = link_cap[p_out]
    others = cap_sum[tails[p_out]] - c_j  # Σ C_i over the other links (no U-turn entry)
    total = LOCAL_SHARE * c_j + others
    scale = np.where(total > c_j, c_j / total, 1.0)
    local = np.where(total > c_j, LOCAL_SHARE * c_j * scale, c_j - others)
    is_local = p_in >= 2 * n_e
    return np.where(is_local, local, link_cap[np.minimum(p_in, 2 * n_e - 1)] * scale)


@dataclass
class FFSResult:
    rate: np.ndarray  # delivered per stream, bit/s
    static_share: np.ndarray  # per stream: min over its hops of f (Eq. 1) as the sources start
    rounds: int  # source rounds
    hop_rounds: int  # allocator rounds in all
    residual: float  # largest relative change of a source rate in the last round (inf: not checked)


def _last_hop(hops: HopArrays) -> np.ndarray:
    return np.r_[hops.first[1:], len(hops.stream)] - 1


def ffs_allocation(
    net: Network, max_rounds: int = 1, rel_tol: float = 1e-6, progress: Callable[[str], None] | None = None
) -> FFSResult:
    """§VII-B's rounds: sources start at their maximum rate with rf = 1 labels; the exact allocation
    (a fixed point of Eq. 1 and Eq. 2 over all hops, 1e-9 relative) cuts them at congested
    egresses. With `max_rounds` > 1 each source then sends what arrived (its rate reduced to the
    fair rate at its bottleneck, labels following) and the allocation is recomputed, until no
    source rate moves by more than `rel_tol`. Rates only go down, as the paper describes; on
    generated graphs of 200-1,000 ASes the second round moved no source by more than 1e-7, so one
    round is the default (each costs a full fixed point: the labels change)."""
    hops = net.hops
    last = _last_hop(hops)
    demand = net.max_rate.copy()

    def rounds_done(k: int, worst: float) -> None:
        if progress:
            progress(f"allocator round {k}, hop inputs moved {worst:.1e}")

    st = solve(hops, demand, demand, max_rounds=500, rel_tol=1e-9, damping=DAMPING, progress=rounds_done)
    static = np.minimum(net.max_rate, np.minimum.reduceat(st.f, hops.first))
    residual, rounds = INF, 1
    for rounds in range(1, max_rounds + 1):
        if rounds > 1:
            st = solve(
                hops, demand, demand, max_rounds=500, rel_tol=1e-9, state=st, damping=DAMPING, progress=rounds_done
            )
        new = np.minimum(demand, st.rate_out[last])
        if rounds > 1:  # round 1 moves every source from its maximum: nothing to check yet
            with np.errstate(invalid="ignore", divide="ignore"):
                moved = np.where(new == demand, 0.0, np.abs(new - demand) / np.maximum(new, demand))
            residual = float(moved.max()) if len(moved) else 0.0
            if progress:
                progress(f"source round {rounds}: rates moved {residual:.1e}")
        demand = new
        if residual <= rel_tol or rounds == max_rounds:
            break
    return FFSResult(st.rate_out[last], static, rounds, st.rounds, residual)


def gma_static(ffs: FFSResult) -> np.ndarray:
    """GLWP's allocation by GMA: static fair shares for the worst case, every interface congested
    (FFS §III: FFS is a dynamic adaptation of GMA). Each AS splits M(i, j) among the paths over the
    pair in proportion to what they were given upstream — Eq. 1's f with τ = 1 at every hop and
    no unused share passed on — and a path gets the smallest of its hops' shares."""
    return ffs.static_share


def helia_per_as(net: Network) -> np.ndarray:
    """Helia's per-AS allocation (Flyovers; FFS Table I: fairness "per active AS"): every AS divides
    each egress link's capacity equally among the source ASes with a reservation through it, and a
    source AS divides its part equally among its own paths through that egress. Unused allocations
    are not passed to others. The path gets min(max rate, its smallest per-hop allocation). (Our
    reading: the paper gives the model's name and its citation, not the formula.)"""
    hops = net.hops
    src = net.node[hops.first][hops.stream]  # each hop's source AS
    width = int(src.max()) + 1
    key = hops.egress.astype(np.int64) * width + src
    uniq, inv, per_src = np.unique(key, return_inverse=True, return_counts=True)
    n_as = np.bincount(uniq // width, minlength=len(hops.target))
    alloc = hops.target[hops.egress] / n_as[hops.egress] / per_src[inv]
    return np.minimum(net.max_rate, np.minimum.reduceat(alloc, hops.first))


def deployment(paths: Paths, n: int, fractions: list[float], rng: np.random.Generator) -> dict[float, np.ndarray]:
    """Appendix C: the security effectiveness of each path, the fraction of its on-path ASes
    (source and destination included) that run FFS, with `fraction` of all ASes sampled at random."""
    out = {}
    valid = paths.nodes >= 0
    for frac in fractions:
        if not 0 <= frac <= 1:
            raise ValueError(f"deployed fraction must be in [0, 1], got {frac}")
        on = np.zeros(n, dtype=bool)
        on[rng.choice(n, size=round(frac * n), replace=False)] = True
        deployed = (on[np.where(valid, paths.nodes, 0)] & valid).sum(axis=1)
        out[frac] = deployed / (paths.length + 1)
    return out
