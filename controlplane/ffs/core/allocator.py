# SPDX-License-Identifier: Apache-2.0
"""The exact FFS allocation: the oracle every test and experiment compares against.

As the paper's network simulator computes it (FFS §VII-B): Eq. 1 normalizes each stream's fair
share per hop against F^pre of its (ingress, egress) pair; Eq. 2 cuts each stream to f·τ at a
congested egress, with τ the root of Σ min(r_in, f·τ) = T_j (the paper finds it by Brent's method;
g is piecewise linear, so the root of the right piece is exact); hops are recomputed from their
upstream outputs until nothing changes (a fixed point). Every round is a handful of array
operations over all stream-hops (bincount per pair and egress, one sort for every τ), so a round
costs O(H log H) for H stream-hops. T_j is the egress's
target capacity (spec §9; the line rate only when no target is configured and Σ M = C).

RI follows Algorithm 2 (with C = T_j) and RRI Algorithm 4 evaluated with the *pre-γ* normalized
label (docs/allocator.md: literally ordered, RRI could never fall below 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from ffs.core.jsonsafe import finite
from ffs.core.topology import Topology

INF = math.inf


@dataclass(frozen=True)
class HopResult:
    node: str
    ingress: str
    egress: str
    f: float  # FFS at this hop (Eq. 1), bit/s
    rate_in: float
    rate_out: float
    gamma: float
    rf_norm: float  # r_in / f: the normalized relative label before γ
    rf_out: float  # min(rf_norm, τ)
    ri: float  # after Algorithm 2 at this hop
    rri: float  # after Algorithm 4 at this hop


@dataclass(frozen=True)
class StreamResult:
    name: str
    demand: float
    rate: float  # delivered after the last hop
    hops: tuple[HopResult, ...]


@dataclass(frozen=True)
class EgressResult:
    node: str
    egress: str
    target: float
    offered: float  # R_*j
    accepted: float  # A_j
    congested: bool  # R_*j > T_j
    tau: float  # inf when uncongested (or when the streams with a share cannot fill T_j)


@dataclass(frozen=True)
class Allocation:
    streams: tuple[StreamResult, ...]
    egresses: tuple[EgressResult, ...]
    rounds: int

    def stream(self, name: str) -> StreamResult:
        return next(s for s in self.streams if s.name == name)

    def tau(self, node: str, egress: str) -> float:
        return next(e.tau for e in self.egresses if e.node == node and e.egress == egress)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = finite(
            {
                "streams": [asdict(s) for s in self.streams],
                "egresses": [asdict(e) for e in self.egresses],
                "rounds": self.rounds,
            }
        )
        return out


class AllocationError(ValueError):
    """The topology has no FFS allocation (an unmanaged egress) or the iteration found no fixed point."""


def _times(a: float, b: float) -> float:
    """a·b with 0·∞ = 0: a stream without a share (f = 0) gets nothing at any finite τ, so also in
    the limit τ → ∞; likewise its RRI τ/rf_norm = τ·f/r."""
    return 0.0 if a == 0 or b == 0 else a * b


def solve_tau(rates: list[float], shares: list[float], target: float) -> float:
    """τ with Σ min(r, f·τ) = target (Eq. 2) for one egress; ∞ when Σ r <= target (uncongested) or
    when the streams with a share cannot fill the target even unconstrained. See `egress_taus`."""
    r = np.asarray(rates, dtype=float)
    f = np.asarray(shares, dtype=float)
    tau, _offered, _congested = egress_taus(np.zeros(len(r), dtype=np.intp), r, f, np.array([float(target)]))
    return float(tau[0])


def egress_taus(
    egress: np.ndarray, rates: np.ndarray, shares: np.ndarray, targets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """τ_j of every egress at once (Eq. 2), with the offered load R_*j and whether it is congested.

    `egress[h]`, `rates[h]`, `shares[h]`: the egress, arriving rate and f of stream-hop h;
    `targets[j]`: T_j. g_j(τ) = Σ min(r, f·τ) − T_j is piecewise linear and increasing with
    breakpoints r/f. One sort by (egress, r/f) gives every egress's breakpoints in order; segmented
    prefix sums give g at each breakpoint, the first breakpoint with g ≥ 0 names the linear piece
    that holds the root, and the root of that piece is exact: τ = (T − Σ_{below} r) / Σ_{above} f,
    both sums taken afresh per egress (so no cancellation across egresses reaches the result).
    Cost O(H log H) for H stream-hops, whatever the number of egresses."""
    n_eg = len(targets)
    offered = np.bincount(egress, weights=rates, minlength=n_eg)
    congested = offered > targets
    tau = np.full(n_eg, INF)
    tau[congested & (targets <= 0)] = 0.0
    live = congested & (targets > 0)
    act = live[egress] & (shares > 0) & (rates > 0)
    e, r, f = egress[act], rates[act], shares[act]
    # the streams with a share must be able to fill T_j, else τ_j = ∞ (they pass whole)
    fillable = np.bincount(e, weights=r, minlength=n_eg) > targets
    keep = fillable[e]
    e, r, f = e[keep], r[keep], f[keep]
    if len(e) == 0:
        return tau, offered, congested
    b = r / f
    if n_eg < 1 << 16:  # by r/f, then stably by egress: numpy radix-sorts 16-bit keys in O(n)
        by_b = np.argsort(b, kind="stable")
        order = by_b[np.argsort(e[by_b].astype(np.uint16), kind="stable")]
    else:
        order = np.lexsort((b, e))
    e, r, f, b = e[order], r[order], f[order], b[order]
    n = len(e)
    starts = np.flatnonzero(np.r_[True, e[1:] != e[:-1]])
    ends = np.r_[starts[1:], n] - 1
    seg = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, n]))
    cr = np.cumsum(r)
    cf = np.cumsum(f)
    base_r = np.where(starts > 0, cr[starts - 1], 0.0)
    r_le = cr - base_r[seg]  # Σ r of the breakpoints up to here (unconstrained at τ = b)
    f_gt = cf[ends][seg] - cf  # Σ f of those above (constrained); exactly 0 at the last
    g = r_le + b * f_gt - targets[e]
    pos = np.arange(n)
    first = np.minimum.reduceat(np.where(g >= 0, pos, n), starts)
    first = np.minimum(first, ends)  # g(max b) = Σ r − T > 0; rounding cannot push past it
    kpos = np.repeat(first, np.diff(np.r_[starts, n]))
    below = pos < kpos
    eg = e[starts]
    r_below = np.bincount(e[below], weights=r[below], minlength=n_eg)[eg]
    f_above = np.bincount(e[~below], weights=f[~below], minlength=n_eg)[eg]
    root = (targets[eg] - r_below) / f_above
    # the root lies in [b_{k-1}, b_k]; clamp against rounding
    lo = np.where(first > starts, b[np.maximum(first - 1, 0)], 0.0)
    tau[eg] = np.clip(root, lo, b[first])
    return tau, offered, congested


@dataclass
class HopArrays:
    """Stream-hops as arrays, stream after stream and hop after hop (stream-major order).

    `stream[h]`, `pair[h]` (the node's (ingress, egress) pair: its M and F^pre) and `egress[h]`
    (the node's egress: its T_j and τ_j) index `share` (M per pair, bit/s) and `target` (T_j).
    `reset[h]`: the hop's packets arrive without a label the node uses (no shim, or an untrusted
    ingress): the switch reads rf = 1 and weighs them by their bytes, so their f^pre is their rate."""

    stream: np.ndarray
    pair: np.ndarray
    egress: np.ndarray
    share: np.ndarray
    target: np.ndarray
    reset: np.ndarray | None = None

    def __post_init__(self) -> None:
        n_streams = int(self.stream[-1]) + 1 if len(self.stream) else 0
        lengths = np.bincount(self.stream, minlength=n_streams)
        self.first = np.r_[0, np.cumsum(lengths)[:-1]].astype(np.intp)
        self.hop = np.arange(len(self.stream)) - self.first[self.stream]  # k within the stream
        width = int(lengths.max()) if n_streams else 0
        # a (stream, hop) grid of flat indices, padded with -1: rates run down a path as a
        # cumulative minimum along the grid's rows
        self.grid = np.full((n_streams, width), -1, dtype=np.intp)
        self.grid[self.stream, self.hop] = np.arange(len(self.stream))
        self.valid = self.grid >= 0
        self.has_next = np.r_[self.stream[1:] == self.stream[:-1], False]
        if self.reset is None:
            self.reset = np.zeros(len(self.stream), dtype=bool)


@dataclass
class HopState:
    """One round's values per stream-hop (bit/s) and per egress."""

    f: np.ndarray  # Eq. 1
    rate_in: np.ndarray
    rate_out: np.ndarray
    f_pre: np.ndarray
    tau: np.ndarray  # per egress
    offered: np.ndarray
    congested: np.ndarray
    rounds: int = 0
    worst: float = INF  # largest relative move of a hop input in the last round


def _rel_change(a: np.ndarray, b: np.ndarray) -> float:
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.where(a == b, 0.0, np.abs(a - b) / np.maximum(np.abs(a), np.abs(b)))
    return float(d.max()) if len(d) else 0.0


def solve(
    hops: HopArrays,
    demand: np.ndarray,
    f0: np.ndarray,
    max_rounds: int = 1000,
    rel_tol: float = 1e-12,
    state: HopState | None = None,
    damping: float = 1.0,
    progress: Callable[[int, float], None] | None = None,
) -> HopState:
    """Rounds of Eq. 1 and Eq. 2 over every stream-hop at once until no hop input (rate, f^pre)
    moves by more than `rel_tol` relative. Each round: F^pre per pair by one bincount, f (Eq. 1),
    τ per egress from the previous round's arriving rates (`egress_taus`), then the rates run down
    every path in the same round (r_out = min(r_in, f·τ) hop after hop: a cumulative minimum).
    `state` warm-starts from an earlier solution (the network study's sources change their rates).
    `damping` α < 1 moves each τ only part of the way, τ ← τ_prev^(1−α) · τ_new^α (geometric, τ is
    a ratio): τ_j falls when upstream τs rise, so on graphs where egresses feed each other in cycles
    the undamped rounds overshoot and settle slowly (a generated 200-AS graph of the network study:
    177 rounds to 1e-9 undamped, 49 with α = 0.7). The fixed point is the same.
    Returns the last state; `state.worst > rel_tol` when `max_rounds` ran out."""
    s_of = hops.stream
    reset = hops.reset if hops.reset is not None else np.zeros(len(s_of), dtype=bool)
    if state is None:
        rate_in, f_pre = demand[s_of].astype(float), f0[s_of].astype(float)
    else:
        rate_in, f_pre = state.rate_in.copy(), state.f_pre.copy()
        rate_in[hops.first] = demand
        f_pre[hops.first] = f0
    f_pre = np.where(reset, rate_in, f_pre)
    share_h = hops.share[hops.pair]
    n_pairs = len(hops.share)
    st = state
    for rounds in range(1, max_rounds + 1):
        big_f = np.bincount(hops.pair, weights=f_pre, minlength=n_pairs)[hops.pair]  # F^pre(i, j)
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where(big_f > 0, f_pre / big_f * share_h, 0.0)  # Eq. 1
        tau, offered, congested = egress_taus(hops.egress, rate_in, f, hops.target)
        if damping < 1 and st is not None:
            both = np.isfinite(tau) & np.isfinite(st.tau) & (tau > 0) & (st.tau > 0)
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                tau = np.where(both, st.tau ** (1 - damping) * tau**damping, tau)
        tau_h = tau[hops.egress]
        with np.errstate(invalid="ignore"):
            cut = np.where((f == 0) | (tau_h == 0), 0.0, f * tau_h)  # 0·∞ = 0: no share, nothing
        cut = np.where(congested[hops.egress], cut, INF)  # Eq. 2; uncongested: pass
        grid_cut = np.where(hops.valid, cut[hops.grid], INF)
        grid_cut[:, 0] = np.minimum(grid_cut[:, 0], demand)
        rate_out = np.minimum.accumulate(grid_cut, axis=1)[hops.valid]
        new_in = np.empty_like(rate_in)
        new_in[hops.first] = demand
        nxt = np.flatnonzero(hops.has_next)
        new_in[nxt + 1] = rate_out[nxt]
        new_f_pre = f_pre.copy()
        new_f_pre[nxt + 1] = f[nxt]
        new_f_pre = np.where(reset, new_in, new_f_pre)  # no usable label: weighed by its bytes
        worst = max(_rel_change(rate_in, new_in), _rel_change(f_pre, new_f_pre))
        # r_in reported is the rate each hop cut this round (rate_out = min(new r_in, f·τ))
        st = HopState(
            f, new_in, rate_out, new_f_pre, tau, offered, congested, rounds + (state.rounds if state else 0), worst
        )
        rate_in, f_pre = new_in, new_f_pre
        if progress:
            progress(st.rounds, worst)
        if worst <= rel_tol:
            break
    assert st is not None
    return st


def _hop_arrays(topo: Topology) -> tuple[HopArrays, list[tuple[str, str]]]:
    """The topology's stream-hops as arrays, and the (node, egress) of each egress index."""
    pair_ids: dict[tuple[str, str, str], int] = {}
    egress_ids: dict[tuple[str, str], int] = {}
    stream_of, pair_of, egress_of, reset = [], [], [], []
    for n, s in enumerate(topo.streams):
        shim = s.labelled  # does the packet carry the FFS shim as it arrives at this hop?
        for h in s.path:
            node = topo.nodes[h.node]
            ingress = node.interfaces[h.ingress]
            # the ingress parser uses the shim's rf only on a trusted port (spec §7.1); otherwise
            # rf = 1. A port that inserts adds the shim (with this node's rf_out) to bare packets,
            # and an egress that strips removes it before the next node.
            reset.append(not (shim and ingress.trust))
            shim = (shim or ingress.insert) and not node.interfaces[h.egress].strip
            if h.egress not in node.fairness:
                raise AllocationError(
                    f"stream {s.name!r}: node {h.node!r} has no fairness column for egress {h.egress!r} (FFS does not "
                    "manage it)"
                )
            stream_of.append(n)
            pair_of.append(pair_ids.setdefault((h.node, h.ingress, h.egress), len(pair_ids)))
            egress_of.append(egress_ids.setdefault((h.node, h.egress), len(egress_ids)))
    share = np.array([topo.nodes[n].share(i, j) for (n, i, j) in pair_ids], dtype=float)
    target = np.array([topo.nodes[n].target(j) for (n, j) in egress_ids], dtype=float)
    hops = HopArrays(
        np.array(stream_of, dtype=np.intp),
        np.array(pair_of, dtype=np.intp),
        np.array(egress_of, dtype=np.intp),
        share,
        target,
        np.array(reset, dtype=bool),
    )
    return hops, list(egress_ids)


def allocate(topo: Topology, max_rounds: int = 1000, rel_tol: float = 1e-12) -> Allocation:
    """The FFS allocation of `topo`'s streams: every source starts at its demand and its initial
    labels; each round recomputes every hop (Eq. 1, then Eq. 2 with τ per congested egress) from the
    previous round's upstream values, until no hop input changes by more than `rel_tol`."""
    if not topo.streams:
        return Allocation((), (), 0)
    hops, egress_names = _hop_arrays(topo)
    demand = np.array([s.demand for s in topo.streams], dtype=float)
    # the switch weighs a packet's bytes by 1/rf (spec §2), so a labelled source's f^pre at its
    # first hop is demand / rf = demand · f / r, its f label only when it sends at its r label
    f0 = np.array([s.demand / s.rf for s in topo.streams], dtype=float)
    st = solve(hops, demand, f0, max_rounds, rel_tol)
    if st.worst > rel_tol:
        raise AllocationError(
            f"no fixed point after {max_rounds} rounds (a hop input still moves by {st.worst:.3g} relative)"
        )
    return _report(topo, hops, st, egress_names)


def allocate_window(topo: Topology, t0: float, t1: float) -> dict[str, float]:
    """Each stream's exact rate averaged over [t0, t1): the window is cut at the streams' `start`
    and `stop` times and each piece gets the allocation of the streams active in it (the fixed
    point, without the transient after a change). What a measurement over the window should meet."""
    if not t1 > t0:
        raise ValueError(f"empty window [{t0}, {t1})")
    cuts = sorted({t0, t1, *(x for s in topo.streams for x in (s.start, s.stop) if x is not None and t0 < x < t1)})
    avg = {s.name: 0.0 for s in topo.streams}
    for a, b in zip(cuts, cuts[1:]):
        mid = (a + b) / 2
        active = tuple(s for s in topo.streams if s.start <= mid and (s.stop is None or mid < s.stop))
        for st in allocate(replace(topo, streams=active)).streams:
            avg[st.name] += st.rate * (b - a) / (t1 - t0)
    return avg


def _report(topo: Topology, hops: HopArrays, st: HopState, egress_names: list[tuple[str, str]]) -> Allocation:
    accepted = np.bincount(hops.egress, weights=st.rate_out, minlength=len(hops.target))
    f_l, rin_l, rout_l = st.f.tolist(), st.rate_in.tolist(), st.rate_out.tolist()
    eg_l = hops.egress.tolist()
    tau_l, off_l, tgt_l, cong_l = st.tau.tolist(), st.offered.tolist(), hops.target.tolist(), st.congested.tolist()
    out_streams = []
    x = 0
    for s in topo.streams:
        ri, rri = INF, INF
        out = []
        for h in s.path:
            f, r_in, r_out, e = f_l[x], rin_l[x], rout_l[x], eg_l[x]
            x += 1
            tau, offered, target, congested = tau_l[e], off_l[e], tgt_l[e], cong_l[e]
            gamma = r_out / r_in if r_in > 0 else 1.0
            rf_norm = r_in / f if f > 0 else INF  # Algorithm 3 line 1: the label before γ
            inv_rf = f / r_in if r_in > 0 else INF  # 1 / rf_norm without 0·∞
            rf_out = min(rf_norm, tau)
            # Algorithm 2 (C = T_j), called after the γ rewrite: p.r = r_out
            ri = min(ri, _times(f, tau)) if congested else min(ri, target, max(r_out * target / offered, f))
            # Algorithm 4 with the pre-γ normalized rf (see docs/allocator.md)
            if rri < 1:
                rri = rri * gamma
            elif congested:
                rri = min(rri, _times(tau, inv_rf))  # τ / rf_norm
            else:
                rri = min(rri, max(target / offered, inv_rf))
            out.append(HopResult(h.node, h.ingress, h.egress, f, r_in, r_out, gamma, rf_norm, rf_out, ri, rri))
        out_streams.append(StreamResult(s.name, s.demand, out[-1].rate_out, tuple(out)))
    egresses = [
        EgressResult(node, j, tgt_l[k], off_l[k], float(accepted[k]), cong_l[k], tau_l[k])
        for k, (node, j) in sorted(enumerate(egress_names), key=lambda kv: kv[1])
    ]
    return Allocation(tuple(out_streams), tuple(egresses), st.rounds)
