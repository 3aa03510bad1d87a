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
    congested: bool
    tau: float  # inf when uncongested


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


def solve_tau(rates: list[float], shares: list[float], target: float) -> float:
    """τ with Σ min(r, f·τ) = target, or ∞ when Σ r <= target (uncongested)."""
    offered = sum(rates)
    if offered <= target:
        return INF
    if target <= 0:
        return 0.0

    def g(tau: float) -> float:
        return sum(min(r, f * tau) for r, f in zip(rates, shares)) - target

    hi = max(r / f for r, f in zip(rates, shares) if f > 0) if any(f > 0 for f in shares) else 0.0
    if hi == 0.0 or g(hi) < 0:
        # the streams with a share cannot fill the target even unconstrained: no finite τ binds
        return INF
    return brentq(g, 0.0, hi, xtol=1e-15, rtol=1e-15, maxiter=500)


def allocate(topo: Topology, max_rounds: int = 1000, rel_tol: float = 1e-13) -> Allocation:
    streams = topo.streams
    # f^pre at the first hop is the stream's initial f label; downstream it is the upstream f.
    # Downstream hops start from the source's values; the first rounds replace them with the
    # upstream outputs, and the loop runs until no hop's input changes.
    rate_in = {(s.name, k): s.demand for s in streams for k in range(len(s.path))}
    f_pre = {(s.name, k): s.f for s in streams for k in range(len(s.path))}
    rounds = 0
    results: dict[tuple[str, int], tuple[float, float, float]] = {}  # (f, r_in, r_out)
    taus: dict[tuple[str, str], tuple[float, float, float]] = {}
    for rounds in range(1, max_rounds + 1):
        # group the current hop inputs by (node, ingress, egress) and by (node, egress)
        pairs: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
        for s in streams:
            for k, h in enumerate(s.path):
                pairs.setdefault((h.node, h.ingress, h.egress), []).append((s.name, k))
        f_now: dict[tuple[str, int], float] = {}
        for (node, i, j), members in pairs.items():
            big_f = sum(f_pre[m] for m in members)
            m_ij = topo.nodes[node].share(i, j)
            for m in members:
                f_now[m] = f_pre[m] / big_f * m_ij if big_f > 0 else 0.0
        by_egress: dict[tuple[str, str], list[tuple[str, int]]] = {}
        for (node, _i, j), members in pairs.items():
            by_egress.setdefault((node, j), []).extend(members)
        new_taus = {}
        for (node, j), members in by_egress.items():
            target = topo.nodes[node].target(j)
            rin = [rate_in[m] for m in members]
            tau = solve_tau(rin, [f_now[m] for m in members], target)
            new_taus[(node, j)] = (tau, sum(rin), target)
        changed = False
        new_results = {}
        for s in streams:
            for k, h in enumerate(s.path):
                m = (s.name, k)
                tau = new_taus[(h.node, h.egress)][0]
                r_out = min(rate_in[m], f_now[m] * tau) if tau < INF else rate_in[m]
                new_results[m] = (f_now[m], rate_in[m], r_out)
                if k + 1 < len(s.path):
                    nxt = (s.name, k + 1)
                    if not _close(rate_in.get(nxt), r_out, rel_tol) or not _close(f_pre.get(nxt), f_now[m], rel_tol):
                        changed = True
                    rate_in[nxt] = r_out
                    f_pre[nxt] = f_now[m]
        results, taus = new_results, new_taus
        if not changed:
            break
    return _report(topo, results, taus, rounds)


def _close(a: float | None, b: float, tol: float) -> bool:
    return a is not None and abs(a - b) <= tol * max(abs(a), abs(b), 1e-300)


def _report(topo, results, taus, rounds) -> Allocation:
    out_streams = []
    for s in topo.streams:
        ri, rri = INF, INF
        hops = []
        for k, h in enumerate(s.path):
            f, r_in, r_out = results[(s.name, k)]
            tau, offered, target = taus[(h.node, h.egress)]
            congested = tau < INF
            gamma = r_out / r_in if r_in > 0 else 1.0
            rf_norm = r_in / f if f > 0 else INF
            rf_out = min(rf_norm, tau)
            # Algorithm 2 (C = T_j), called after the γ rewrite: p.r = r_out
            if congested:
                ri = min(ri, f * tau)
            else:
                cand = max(r_out * target / offered, f) if offered > 0 else target
                ri = min(ri, target, cand)
            # Algorithm 4 with the pre-γ normalized rf
            if rri < 1:
                rri = rri * gamma
            elif congested:
                rri = min(rri, tau / rf_norm)
            else:
                cand = max(target / offered if offered > 0 else INF, 1 / rf_norm)
                rri = min(rri, cand)
            hops.append(HopResult(h.node, h.ingress, h.egress, f, r_in, r_out, gamma, rf_norm, rf_out, ri, rri))
        out_streams.append(StreamResult(s.name, s.demand, hops[-1].rate_out, tuple(hops)))
    egresses = []
    for (node, j), (tau, offered, target) in sorted(taus.items()):
        accepted = sum(
            results[(s.name, k)][2] for s in topo.streams for k, h in enumerate(s.path) if h.node == node and h.egress == j
        )
        egresses.append(EgressResult(node, j, target, offered, accepted, tau < INF, tau))
    return Allocation(tuple(out_streams), tuple(egresses), rounds)
