# SPDX-License-Identifier: Apache-2.0
"""Prometheus metrics of the agent, served on 127.0.0.1 only (another address only if the operator asks)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from ffs.agent.core import Snapshot


class Metrics:
    def __init__(self, port: int | None, address: str = "127.0.0.1") -> None:
        """Serve on address:port; port None builds the registry without a server (tests, embedding)."""
        self.registry = CollectorRegistry()
        e, p = ["egress"], ["ingress", "egress"]
        r = self.registry
        self.tau = Gauge("ffs_tau", "fairness parameter tau per egress (kept while uncongested)", e, registry=r)
        self.congested = Gauge("ffs_congested", "1 while R* exceeds the target", e, registry=r)
        self.accepted = Gauge("ffs_accepted_bps", "accepted rate A_j, bit/s", e, registry=r)
        self.offered = Gauge("ffs_offered_bps", "arrival rate R_*j, bit/s", e, registry=r)
        self.target = Gauge("ffs_target_bps", "target capacity T_j, bit/s", e, registry=r)
        self.egress_drop = Gauge("ffs_egress_drop_bps", "rate dropped by FFS toward this egress, bit/s", e, registry=r)
        self.egress_drops = Counter("ffs_egress_drops", "packets dropped by FFS toward this egress", e, registry=r)
        self.egress_malformed = Counter(
            "ffs_egress_malformed",
            "frames dropped at this egress: their bytes disagree with their IP length",
            e,
            registry=r,
        )
        self.queue = Gauge(
            "ffs_guard_queue_bytes",
            "the queue guard's virtual queue toward this egress, line-rate bytes",
            e,
            registry=r,
        )
        self.draining = Gauge("ffs_draining", "1 while the queue stands and tau aims below the target", e, registry=r)
        self.drain_factor = Gauge(
            "ffs_drain_factor",
            "the fraction of the configured target in force: below 1 while the port drains slower than its speed",
            e,
            registry=r,
        )
        self.drained = Gauge(
            "ffs_drained_bps", "what left the port in the last period, line rate, bit/s", e, registry=r
        )
        self.tm_drops = Counter(
            "ffs_tm_drops", "frames the traffic manager's queue toward this egress dropped", e, registry=r
        )
        self.pair_rate = Gauge("ffs_pair_rate_bps", "arrival rate R_ij, bit/s", p, registry=r)
        self.pair_share = Gauge(
            "ffs_pair_share_bps", "enforced share M_ij (scaled to the target), bit/s", p, registry=r
        )
        self.pair_drop = Gauge("ffs_pair_drop_bps", "rate dropped by FFS, bit/s", p, registry=r)
        self.pair_drops = Counter("ffs_pair_drops", "packets dropped by FFS", p, registry=r)
        self.pair_f = Gauge("ffs_pair_f_bps", "weighted rate F_ij, bit/s", p, registry=r)
        self.pair_malformed = Counter(
            "ffs_pair_malformed", "frames of this pair dropped for a lying length", p, registry=r
        )
        self.pair_quarantined = Gauge(
            "ffs_pair_quarantined", "1 while part of the pair's share is withheld for lying frames", p, registry=r
        )
        self.pair_withheld = Gauge(
            "ffs_pair_withheld",
            "the fraction of the pair's share withheld for lying frames (1: all of it)",
            p,
            registry=r,
        )
        self.port_up = Gauge(
            "ffs_port_up", "1 while the front-panel port's link is up ($PORT_UP)", ("interface", "fp"), registry=r
        )
        self.build = Gauge(
            "ffs_build_info",
            "1, labelled with the agent's version, its Python and the program the switch runs",
            ("version", "python", "program"),
            registry=r,
        )
        self._pairs_seen = float("-inf")
        self.server = self.thread = None
        if port is not None:
            started = start_http_server(port, address, registry=self.registry)
            if isinstance(started, tuple):  # prometheus_client >= 0.16 returns (server, thread)
                self.server, self.thread = started

    def set_build(self, build: dict[str, str]) -> None:
        """ffs_build_info: one series, replaced when the switch's program changes (ffs.agent.service.build_info)."""
        self.build.clear()
        self.build.labels(build["agent_version"], build["python"], build["program"]).set(1)

    def update(self, snap: Snapshot) -> None:
        # the pairs (and the egresses' drops) come from the last telemetry: count each one once
        fresh = snap.pairs_time_s != self._pairs_seen
        self._pairs_seen = snap.pairs_time_s
        for port in snap.ports:
            self.port_up.labels(port.interface, port.fp).set(int(port.up))
        for x in snap.egresses:
            self.tau.labels(x.egress).set(x.tau)
            self.congested.labels(x.egress).set(int(x.congested))
            self.accepted.labels(x.egress).set(x.accepted_bps)
            self.offered.labels(x.egress).set(x.offered_bps)
            self.target.labels(x.egress).set(x.target)
            self.egress_drop.labels(x.egress).set(x.drop_bps)
            if fresh:
                self.egress_drops.labels(x.egress).inc(x.drops)
            self.egress_malformed.labels(x.egress).inc(x.malformed)
            self.queue.labels(x.egress).set(x.queue_bytes)
            self.draining.labels(x.egress).set(int(x.draining))
            self.drain_factor.labels(x.egress).set(x.drain_factor)
            self.drained.labels(x.egress).set(x.drained_bps)
            self.tm_drops.labels(x.egress).inc(x.tm_drops)
        for p in snap.pairs if fresh else ():
            self.pair_rate.labels(p.ingress, p.egress).set(p.rate_bps)
            self.pair_share.labels(p.ingress, p.egress).set(p.share_bps)
            self.pair_drop.labels(p.ingress, p.egress).set(p.drop_bps)
            self.pair_drops.labels(p.ingress, p.egress).inc(p.drops)
            self.pair_f.labels(p.ingress, p.egress).set(p.f_bps)
            self.pair_malformed.labels(p.ingress, p.egress).inc(p.malformed)
            self.pair_quarantined.labels(p.ingress, p.egress).set(int(p.quarantined))
            self.pair_withheld.labels(p.ingress, p.egress).set(p.withheld)

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
