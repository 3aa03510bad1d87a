"""Trace mode: the software switch on synthetic traffic in virtual time.

Streams of a topology (rate, packet size, start and stop, labels) become packets with arrival
times (constant spacing with a random phase, or Poisson), merged in time order and run through one
Pipeline per node; a packet leaving an egress that is linked to another node enters that node at
the same instant (FFS drops before the queue, so no queue is modelled). Every control period of
virtual time, `on_period(now_ns)` runs (the agents' step). Everything is deterministic for a seed.
"""

from __future__ import annotations

import heapq
import ipaddress
import random
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ffs import constants as C
from ffs.frames import ipv4_frame, shim
from ffs.labels import encode
from ffs.switch.pipeline import Pipeline
from ffs.topology import Stream, Topology


@dataclass
class TraceStream:
    name: str
    node: str  # first node
    ingress_port: int
    frame: bytes
    ip_len: int
    rate_bps: float
    start_s: float
    stop_s: float


@dataclass
class EgressQueue:
    """A FIFO behind an egress port: drained at `rate_bps`, tail drop beyond `buffer_bytes`. FFS
    decides before it; the FIFO baseline relies on it alone."""

    rate_bps: float
    buffer_bytes: int
    backlog: float = 0.0
    last_s: float = 0.0
    drops: int = 0
    delay_sum_s: float = 0.0
    delay_n: int = 0

    def admit(self, t: float, size: int) -> bool:
        self.backlog = max(0.0, self.backlog - (t - self.last_s) * self.rate_bps / 8)
        self.last_s = t
        if self.backlog + size > self.buffer_bytes:
            self.drops += 1
            return False
        self.backlog += size
        self.delay_sum_s += self.backlog * 8 / self.rate_bps
        self.delay_n += 1
        return True


@dataclass
class TraceResult:
    bin_s: float
    delivered: dict[str, np.ndarray]  # stream -> IP bytes delivered per bin
    sent: dict[str, int]  # stream -> packets sent
    dropped: dict[str, int]  # stream -> packets dropped anywhere
    packets: int = 0
    periods: list[dict] = field(default_factory=list)  # whatever on_period returned, per period

    def rate_bps(self, stream: str, t0: float, t1: float) -> float:
        """Mean delivered rate of a stream over [t0, t1) in virtual seconds."""
        a, b = int(round(t0 / self.bin_s)), int(round(t1 / self.bin_s))
        return float(self.delivered[stream][a:b].sum()) * 8 / (t1 - t0)


def first_host_address(prefix: str) -> str:
    net = ipaddress.ip_network(prefix)
    return str(next(net.hosts()) if net.num_addresses > 1 else net.network_address)


def destination_for(topo: Topology, s: Stream) -> str:
    """An address that the last hop routes to the stream's final egress."""
    last = s.path[-1]
    for r in topo.nodes[last.node].routes:
        if r.interface == last.egress and ipaddress.ip_network(r.prefix).version == 4:
            return first_host_address(r.prefix)
    raise ValueError(f"stream {s.name}: node {last.node} has no IPv4 route to interface {last.egress}")


def streams_from_topology(topo: Topology, duration_s: float) -> list[TraceStream]:
    out = []
    for k, s in enumerate(topo.streams):
        dst = destination_for(topo, s)
        src = f"10.{200 + k // 250}.{k % 250}.1"
        first = s.path[0]
        ffs = shim(encode(s.rf), C.FLAG_RI) if s.labelled else None
        frame = ipv4_frame(src, dst, s.packet_size, ffs)
        stop = duration_s if s.stop is None else min(s.stop, duration_s)
        out.append(TraceStream(s.name, first.node, topo.nodes[first.node].interfaces[first.ingress].port,
                               frame, s.packet_size, s.demand, s.start, stop))
    return out


def _arrivals(s: TraceStream, rng: random.Random, poisson: bool, jitter: bool = False):
    """Constant spacing, Poisson, or (jitter) uniform in [0.5, 1.5) of the mean gap, as CSFQ's UDP
    sources: deterministic spacing phase-locks with a tail-drop queue and starves some flows."""
    gap = s.ip_len * 8 / s.rate_bps
    t = s.start_s + rng.random() * gap
    while t < s.stop_s:
        yield t
        if poisson:
            t += rng.expovariate(1 / gap)
        elif jitter:
            t += gap * (0.5 + rng.random())
        else:
            t += gap


def run(
    topo: Topology,
    pipelines: dict[str, Pipeline],
    duration_s: float,
    *,
    period_s: float = 0.01,
    on_period: Callable[[int], object] | None = None,
    seed: int = 1,
    poisson: bool = False,
    bin_s: float = 0.01,
    progress: Callable[[float], None] | None = None,
    start_s: float = 0.0,
    queues: dict[tuple[str, int], EgressQueue] | None = None,
    csfq=None,
    jitter: bool = False,
) -> TraceResult:
    """Run [0, duration_s) of the scenario; the pipelines see times start_s + t, so a second run
    on the same pipelines continues their clocks (estimators and agents keep their state)."""
    streams = streams_from_topology(topo, duration_s)
    rng = random.Random(seed)
    nbins = int(np.ceil(duration_s / bin_s)) + 1
    res = TraceResult(bin_s, {s.name: np.zeros(nbins) for s in streams},
                      {s.name: 0 for s in streams}, {s.name: 0 for s in streams})
    # links: (node, egress port) -> (next node, its ingress port)
    links: dict[tuple[str, int], tuple[str, int]] = {}
    for n in topo.nodes.values():
        for i in n.interfaces.values():
            if i.peer:
                pn, pi = i.peer.split(".")
                links[(n.name, i.port)] = (pn, topo.nodes[pn].interfaces[pi].port)
    gens = [_arrivals(s, random.Random(rng.random()), poisson, jitter) for s in streams]
    heap: list[tuple[float, int]] = []
    for k, g in enumerate(gens):
        t = next(g, None)
        if t is not None:
            heap.append((t, k))
    heapq.heapify(heap)
    next_period = period_s
    next_progress = 0.0
    while heap:
        t, k = heapq.heappop(heap)
        while t >= next_period and next_period <= duration_s:
            if on_period is not None:
                res.periods.append({"t": next_period, "value": on_period(int((start_s + next_period) * 1e9))})
            next_period += period_s
        if progress is not None and t >= next_progress:
            progress(t)
            next_progress = t + duration_s / 100
        s = streams[k]
        t_ns = int((start_s + t) * 1e9)
        node, port, frame = s.node, s.ingress_port, s.frame
        res.sent[s.name] += 1
        res.packets += 1
        label = csfq.label(s.name, t, s.ip_len * 8) if csfq is not None else 0.0
        while True:
            r = pipelines[node].process(frame, port, t_ns)
            if r.egress_port is None:
                res.dropped[s.name] += 1
                break
            q = queues.get((node, r.egress_port)) if queues else None
            if csfq is not None and q is not None:  # CSFQ decides before the FIFO, like FFS
                core = csfq.core(node, r.egress_port, q.rate_bps)
                label = core.decide(t, s.ip_len * 8, label, csfq.rng)
                if label is None:
                    res.dropped[s.name] += 1
                    break
            if q is not None and not q.admit(t, s.ip_len):
                if csfq is not None:
                    csfq.core(node, r.egress_port, q.rate_bps).overflow(t)
                res.dropped[s.name] += 1
                break
            nxt = links.get((node, r.egress_port))
            if nxt is None:
                res.delivered[s.name][int(t / bin_s)] += s.ip_len
                break
            node, port = nxt
            frame = r.frame
        t_next = next(gens[k], None)
        if t_next is not None:
            heapq.heappush(heap, (t_next, k))
    while next_period <= duration_s + 1e-12:
        if on_period is not None:
            res.periods.append({"t": next_period, "value": on_period(int((start_s + next_period) * 1e9))})
        next_period += period_s
    return res
