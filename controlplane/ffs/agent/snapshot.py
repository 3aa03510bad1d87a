# SPDX-License-Identifier: Apache-2.0
"""What the agent reports after each period: per egress, per pair and per front-panel port.

The τ loop fills the egresses every period; the telemetry fills the pairs (and the egresses' drops)
on its own cadence; `ffsctl status`, the metrics and the laboratory read the result.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ffs.agent.frontpanel import PortStatus


@dataclass
class EgressStatus:
    egress: str
    port: int
    capacity: float
    target: float
    accepted_bps: float = 0.0
    offered_bps: float = 0.0
    tau: float = 1.0
    congested: bool = False
    drop_bps: float = 0.0  # dropped by FFS toward this egress (all its pairs), at the last telemetry
    drops: int = 0  # packets dropped between the last two telemetries
    malformed: int = 0  # frames the egress dropped in the last period: bytes disagreeing with the IP length (spec §7.3)
    pipe: int = 0  # the pipe of the egress port, which counts A_j and the lies at j
    # the queue guard (spec §7.7): its virtual queue (line-rate bytes, the fullest pipe's) and its
    # threshold; while the queue stands above half of it, τ aims below the target (spec §9)
    queue_bytes: int = 0
    queue_threshold: int | None = None
    draining: bool = False
    # the traffic manager (spec §9, item 8): frames its queue toward the port dropped in the last
    # period, what left the port (bit/s), and the fraction of the configured target in force (below
    # 1 while the port drains slower than its speed; `target` is then that fraction of it)
    tm_drops: int = 0
    drained_bps: float = 0.0
    drain_factor: float = 1.0


@dataclass
class PairStatus:
    pid: int
    ingress: str
    egress: str
    share_bps: float
    rate_bps: float = 0.0
    f_bps: float = 0.0
    drop_bps: float = 0.0
    drops: int = 0
    malformed: int = 0  # its frames the egress dropped for a lying length in the last period
    malformed_bytes: int = 0
    quarantined: bool = False  # part of its share is withheld for lying frames (spec §7.3, docs/security.md)
    withheld: float = 0.0  # that part: the lying fraction of its admitted bytes (1: all of its share)
    pipe: int = 0  # the pipe of its ingress port, which holds its estimator, counters and f_est cell


@dataclass
class Snapshot:
    time_s: float
    egresses: list[EgressStatus] = field(default_factory=list)
    pairs: list[PairStatus] = field(default_factory=list)
    pairs_time_s: float = float("-inf")  # when the pairs (and the egresses' drops) were read: telemetry
    ports: list[PortStatus] = field(default_factory=list)  # front-panel ports (Tofino, --target tofino)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def tau_display(tau: float | None, congested: bool) -> str:
    """τ as every output shows it: the value, and "(uncongested)" when no drop uses it (γ = 1,
    spec §5.3). The exact allocator has no τ for an uncongested egress."""
    if tau is None or tau == float("inf"):
        return "uncongested"
    return f"{tau:.4f}" if congested else f"{tau:.4f} (uncongested)"
