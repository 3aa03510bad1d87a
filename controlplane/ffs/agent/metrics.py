"""Prometheus metrics of the agent, served on 127.0.0.1 only."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, start_http_server

from ffs.agent.core import Snapshot


class Metrics:
    def __init__(self, port: int, address: str = "127.0.0.1") -> None:
        self.registry = CollectorRegistry()
        e, p = ["egress"], ["ingress", "egress"]
        self.tau = Gauge("ffs_tau", "fairness parameter tau per egress", e, registry=self.registry)
        self.congested = Gauge("ffs_congested", "1 while R* exceeds the target", e, registry=self.registry)
        self.accepted = Gauge("ffs_accepted_bps", "accepted rate A_j", e, registry=self.registry)
        self.offered = Gauge("ffs_offered_bps", "arrival rate R_*j", e, registry=self.registry)
        self.target = Gauge("ffs_target_bps", "target capacity T_j", e, registry=self.registry)
        self.pair_rate = Gauge("ffs_pair_rate_bps", "arrival rate R_ij", p, registry=self.registry)
        self.pair_drop = Gauge("ffs_pair_drop_bps", "rate dropped by FFS", p, registry=self.registry)
        self.pair_f = Gauge("ffs_pair_f_bps", "weighted rate F_ij", p, registry=self.registry)
        self.server, self.thread = start_http_server(port, address, registry=self.registry)

    def update(self, snap: Snapshot) -> None:
        for x in snap.egresses:
            self.tau.labels(x.egress).set(x.tau)
            self.congested.labels(x.egress).set(int(x.congested))
            self.accepted.labels(x.egress).set(x.accepted_bps)
            self.offered.labels(x.egress).set(x.offered_bps)
            self.target.labels(x.egress).set(x.target)
        for p in snap.pairs:
            self.pair_rate.labels(p.ingress, p.egress).set(p.rate_bps)
            self.pair_drop.labels(p.ingress, p.egress).set(p.drop_bps)
            self.pair_f.labels(p.ingress, p.egress).set(p.f_bps)
