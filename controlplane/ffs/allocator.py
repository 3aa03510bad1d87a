"""The exact FFS allocation: the oracle every test and experiment compares against.

As the paper's network simulator computes it (FFS §VII-B): Eq. 1 normalizes each stream's fair
share per hop against F^pre of its (ingress, egress) pair; Eq. 2 cuts each stream to f·τ at a
congested egress, with τ the root of Σ min(r_in, f·τ) = T_j found by Brent's method; hops are
recomputed from their upstream outputs until nothing changes (a fixed point). T_j is the egress's
target capacity (spec §9; the line rate only when no target is configured and Σ M = C).

RI follows Algorithm 2 (with C = T_j) and RRI Algorithm 4 evaluated with the *pre-γ* normalized
label (design brief trap 1).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.optimize import brentq

from ffs.jsonsafe import finite
from ffs.topology import Topology

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

    def to_dict(self) -> dict:
        return finite({"streams": [asdict(s) for s in self.streams], "egresses": [asdict(e) for e in self.egresses], "rounds": self.rounds})


class AllocationError(ValueError):
    """The topology has no FFS allocation (an unmanaged egress) or the iteration found no fixed point."""


def _times(a: float, b: float) -> float:
    """a·b with 0·∞ = 0: a stream without a share (f = 0) gets nothing at any finite τ, so also in
    the limit τ → ∞; likewise its RRI τ/rf_norm = τ·f/r."""
    return 0.0 if a == 0 or b == 0 else a * b


def solve_tau(rates: list[float], shares: list[float], target: float) -> float:
    """τ with Σ min(r, f·τ) = target (Eq. 2), by Brent's method; ∞ when Σ r <= target (uncongested)
    or when the streams with a share cannot fill the target even unconstrained.

    g(τ) = Σ min(r, f·τ) − target is piecewise linear and increasing, with breakpoints r/f. Brent's
    method gets the bracket between the two breakpoints where g changes sign, so it converges in a
    few steps to full precision whatever the spread of the labels (a bracket [0, max r/f] can span
    hundreds of orders of magnitude)."""
    if sum(rates) <= target:
        return INF
    if target <= 0:
        return 0.0
    pts = sorted((r / f, r, f) for r, f in zip(rates, shares) if f > 0 and r > 0)
    if sum(r for _, r, _ in pts) <= target:
        return INF

    def g(tau: float) -> float:
        return sum(min(r, f * tau) for _, r, f in pts) - target

    lo = 0.0
    for b, _, _ in pts:
        gb = g(b)
        if gb == 0:
            return b
        if gb > 0:
            return brentq(g, lo, b, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=200)
        lo = b
    raise AssertionError("unreachable: g(max r/f) = Σ r - target > 0")


def allocate(topo: Topology, max_rounds: int = 1000, rel_tol: float = 1e-12) -> Allocation:
    """The FFS allocation of `topo`'s streams: every source starts at its demand and its initial
    labels; each round recomputes every hop (Eq. 1, then Eq. 2 with τ per congested egress) from the
    previous hop's outputs of the round before, until no hop input changes by more than `rel_tol`."""
    streams = topo.streams
    pairs: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    for s in streams:
        for k, h in enumerate(s.path):
            node = topo.nodes[h.node]
            if h.egress not in node.fairness:
                raise AllocationError(
                    f"stream {s.name!r}: node {h.node!r} has no fairness column for egress {h.egress!r} (FFS does not manage it)"
                )
            pairs.setdefault((h.node, h.ingress, h.egress), []).append((s.name, k))
    by_egress: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for (node, _i, j), members in pairs.items():
        by_egress.setdefault((node, j), []).extend(members)
    # f^pre at the first hop is the stream's initial f label; downstream it is the upstream f.
    # Downstream hops start from the source's values; the rounds replace them with upstream outputs.
    rate_in = {(s.name, k): s.demand for s in streams for k in range(len(s.path))}
    f_pre = {(s.name, k): s.f for s in streams for k in range(len(s.path))}
    results: dict[tuple[str, int], tuple[float, float, float]] = {}  # (f, r_in, r_out)
    taus: dict[tuple[str, str], _Egress] = {}
    for rounds in range(1, max_rounds + 1):
        f_now: dict[tuple[str, int], float] = {}
        for (node, i, j), members in pairs.items():
            big_f = sum(f_pre[m] for m in members)  # F^pre(i, j)
            m_ij = topo.nodes[node].share(i, j)  # M(i, j) scaled to the target (spec §9)
            for m in members:
                f_now[m] = f_pre[m] / big_f * m_ij if big_f > 0 else 0.0  # Eq. 1
        taus = {}
        for (node, j), members in by_egress.items():
            target = topo.nodes[node].target(j)
            rin = [rate_in[m] for m in members]
            offered = sum(rin)
            tau = solve_tau(rin, [f_now[m] for m in members], target)
            taus[(node, j)] = _Egress(tau, offered, target, offered > target)
        worst = 0.0
        results = {}
        for s in streams:
            for k, h in enumerate(s.path):
                m = (s.name, k)
                e = taus[(h.node, h.egress)]
                r_out = min(rate_in[m], _times(f_now[m], e.tau)) if e.congested else rate_in[m]  # Eq. 2
                results[m] = (f_now[m], rate_in[m], r_out)
                if k + 1 < len(s.path):
                    nxt = (s.name, k + 1)
                    worst = max(worst, _rel(rate_in[nxt], r_out), _rel(f_pre[nxt], f_now[m]))
                    rate_in[nxt] = r_out
                    f_pre[nxt] = f_now[m]
        if worst <= rel_tol:
            return _report(topo, results, taus, rounds)
    raise AllocationError(f"no fixed point after {max_rounds} rounds (a hop input still moves by {worst:.3g} relative)")


@dataclass(frozen=True)
class _Egress:
    tau: float
    offered: float
    target: float
    congested: bool


def _rel(a: float, b: float) -> float:
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def _report(topo: Topology, results, taus: dict[tuple[str, str], _Egress], rounds: int) -> Allocation:
    out_streams = []
    for s in topo.streams:
        ri, rri = INF, INF
        hops = []
        for k, h in enumerate(s.path):
            f, r_in, r_out = results[(s.name, k)]
            e = taus[(h.node, h.egress)]
            tau, offered, target = e.tau, e.offered, e.target
            gamma = r_out / r_in if r_in > 0 else 1.0
            rf_norm = r_in / f if f > 0 else INF  # Algorithm 3 line 1: the label before γ
            inv_rf = f / r_in if r_in > 0 else INF  # 1 / rf_norm without 0·∞
            rf_out = min(rf_norm, tau)
            # Algorithm 2 (C = T_j), called after the γ rewrite: p.r = r_out
            if e.congested:
                ri = min(ri, _times(f, tau))
            else:
                ri = min(ri, target, max(r_out * target / offered, f))
            # Algorithm 4 with the pre-γ normalized rf (design brief trap 1)
            if rri < 1:
                rri = rri * gamma
            elif e.congested:
                rri = min(rri, _times(tau, inv_rf))  # τ / rf_norm
            else:
                rri = min(rri, max(target / offered, inv_rf))
            hops.append(HopResult(h.node, h.ingress, h.egress, f, r_in, r_out, gamma, rf_norm, rf_out, ri, rri))
        out_streams.append(StreamResult(s.name, s.demand, hops[-1].rate_out, tuple(hops)))
    egresses = []
    for (node, j), e in sorted(taus.items()):
        accepted = sum(
            results[(s.name, k)][2] for s in topo.streams for k, h in enumerate(s.path) if h.node == node and h.egress == j
        )
        egresses.append(EgressResult(node, j, e.target, e.offered, accepted, e.congested, e.tau))
    return Allocation(tuple(out_streams), tuple(egresses), rounds)
