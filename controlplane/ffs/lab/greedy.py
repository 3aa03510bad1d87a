# SPDX-License-Identifier: Apache-2.0
"""The greedy node (FFS §XI, Corollary 1, Figure 7): two ingress interfaces of one node send the
same total rate to one egress with equal shares M(a, j) = M(b, j) = C/2; each spreads its traffic
over streams whose relative labels p.r/p.f follow a distribution. Corollary 1: an interface with a
static distribution (one stream, or all its streams at one ratio) keeps at least M(i, j), so at
least 50 % of the egress, whatever the other does; so a greedy interface can do no better than
concentrate its traffic.

Why: FFS normalizes an interface's labels against F_(i,j) (Eq. 1), so its streams' shares sum to
M(i, j) whatever the labels say; the interface gets Σ_s min(r_s, f_s·τ) ≤ min(R, M·τ), with
equality exactly when every stream sits on the same side of τ. A spread of ratios leaves the share
of the streams below f·τ unused, and τ hands it to everyone, the other interface included.

Both interfaces are links from upstream FFS nodes (`trust: true`): a host-facing port resets every
label to rf = 1 (docs/spec.md), which makes every distribution static. Every stream of an
interface sends the same rate; its label rf is the distribution's quantile at (k + ½)/K, so a
cell is deterministic and needs no sampling. The scale of rf does not matter (normalization
divides it out), only its shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

from ffs.core.allocator import allocate
from ffs.lab.attacks import loads
from ffs.lab.experiments import run_scenario

CAPACITY = 100e6  # the egress, line rate; the ingresses are 4x faster so that they never limit
STREAMS = 16  # per interface, for every distribution but `static`
SIZE = 1250  # IP bytes per packet (the repository's default; the paper gives no size)
RF_MIN = 2.0**-10  # labels below this would be clipped by the 16-bit log code anyway


def _quantiles(inv_cdf: Callable[[float], float], k: int = STREAMS) -> tuple[float, ...]:
    return tuple(max(RF_MIN, inv_cdf((i + 0.5) / k)) for i in range(k))


# name -> rf labels of the interface's streams (equal rates)
DISTRIBUTIONS: dict[str, tuple[float, ...]] = {
    "static": (1.0,),  # one stream: the paper's static distribution
    "equal": (1.0,) * STREAMS,  # many streams at one ratio: static too (Corollary 1 generalized)
    "uniform": _quantiles(lambda q: 2 * q),  # U(0, 2]
    "normal": _quantiles(NormalDist(1.0, 0.3).inv_cdf),
    "exponential": _quantiles(lambda q: -math.log(1 - q)),  # Exp(1)
    "pareto": _quantiles(lambda q: (1 - q) ** (-1 / 1.16)),  # α = 1.16: the 80/20 tail
    "log-uniform": _quantiles(lambda q: 10 ** (4 * q - 2)),  # 0.01 .. 100: four decades
    "bimodal": tuple(0.1 if i < STREAMS // 2 else 1.9 for i in range(STREAMS)),
}


def topology(dist_a: str, dist_b: str, load: float = 1.0, duration: float = 1.0, size: int = SIZE) -> str:
    """Ingress a sends with `dist_a`, b with `dist_b`, each `load` × C in total (equal per stream)."""
    cap = CAPACITY
    streams = []
    for iface, dist in (("a", dist_a), ("b", dist_b)):
        labels = DISTRIBUTIONS[dist]
        per = load * cap / len(labels)
        streams += [
            f"  - {{name: {iface}{k}, path: [{{node: n, ingress: {iface}, egress: j}}], demand: {per:.0f}, "
            f"rf: {rf!r}, packet_size: {size}}}"
            for k, rf in enumerate(labels)
        ]
    return (
        f"""
name: greedy-{dist_a}-{dist_b}
duration: {duration}
nodes:
  n:
    interfaces:
      a: {{capacity: {4 * cap:.0f}, port: 1, trust: true}}
      b: {{capacity: {4 * cap:.0f}, port: 2, trust: true}}
      j: {{capacity: {cap:.0f}, port: 3}}
    fairness:
      j: {{a: {cap / 2:.0f}, b: {cap / 2:.0f}}}
    routes:
      - {{prefix: 10.0.3.0/24, interface: j}}
streams:
"""
        + "\n".join(streams)
        + "\n"
    )


@dataclass(frozen=True)
class Cell:
    dist_a: str  # the interface under evaluation
    dist_b: str  # the other interface
    load: float  # each interface's total rate, in units of C
    exact_share: float  # a's fraction of the egress, exact allocator (Eq. 1-2)
    measured_share: float | None  # the same, packet by packet in virtual time (None: not run)
    measured_total_bps: float | None  # what the egress delivered (both interfaces)


def _shares(rates: dict[str, float]) -> tuple[float, float]:
    a = sum(v for k, v in rates.items() if k.startswith("a"))
    b = sum(v for k, v in rates.items() if k.startswith("b"))
    return a / (a + b), a + b


def exact(dist_a: str, dist_b: str, load: float = 1.0) -> float:
    alloc = allocate(loads(topology(dist_a, dist_b, load)))
    return _shares({s.name: s.rate for s in alloc.streams})[0]


def measure(
    dist_a: str, dist_b: str, load: float = 1.0, duration: float = 1.0, seed: int = 1, arrivals: str = "jitter"
) -> Cell:
    """One cell: the exact share and the packet-by-packet share (mean over the run's second half),
    the agent's τ loop every 5 ms, the egress drained at its speed by the traffic manager."""
    res = run_scenario(
        loads(topology(dist_a, dist_b, load, duration)),
        "ffs",
        duration_s=duration,
        seed=seed,
        arrivals=arrivals,
        bin_s=0.05,
    )
    share, total = _shares({s["stream"]: s["measured"] for s in res.streams})
    return Cell(dist_a, dist_b, load, exact(dist_a, dist_b, load), share, total)
