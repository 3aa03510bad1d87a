# SPDX-License-Identifier: Apache-2.0
"""Trace mode: the software switch on synthetic traffic or a pcap in virtual time.

`run`: streams of a topology (line rate, packet size, start and stop, labels) become packets with
arrival times (constant spacing with a random phase, or Poisson), merged in time order and run
through one Pipeline per node, each with its traffic manager (`ffs.switch.tm`: a FIFO per egress
port at the port's speed); a packet leaving an egress that is linked to another node enters that
node when its last bit has left (its departure from the queue). Every control period of virtual
time, `on_period(now_ns)` runs (the agents' step). Everything is deterministic for a seed. With
FastPipelines (and no CSFQ baseline) the packet loop runs in C, with identical results.

Rates are line rates (spec §4): a stream of `rate_bps` sends frames whose bytes on the wire
(`ffs.core.tables.wire_len`: FCS, padding, preamble and gap) add up to that rate, and the delivered
bytes are counted the same way, in the bin of the time the source sent them (so that a window of
the run compares with the exact allocation of the streams active in it, `allocate_window`).

`replay`: any time-ordered frames (`stream_arrivals`, `merge`, `pcap_arrivals`) through one
pipeline, `on_period(now_ns, driver)` every period, per-stream accepted bytes per time bin.
"""

from __future__ import annotations

import heapq
import ipaddress
import math
import random
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ffs.core import constants
from ffs.core.frames import ipv4_frame, lie_ip_len, shim
from ffs.core.labels import encode
from ffs.core.tables import wire_len
from ffs.core.topology import Stream, Topology
from ffs.driver.base import Driver
from ffs.switch.driver import LocalDriver
from ffs.switch.fast import FastPipeline, _fastpath
from ffs.switch.pipeline import DROP_TM, Pipeline


def frame_wire_len(frame: bytes) -> int:
    """What one frame (as a source hands it over, without FCS) costs its port (spec §4)."""
    return wire_len(len(frame) + constants.FCS_LEN)


@dataclass
class TraceStream:
    name: str
    node: str  # first node
    ingress_port: int
    frame: bytes
    rate_bps: float  # line rate
    start_s: float
    stop_s: float

    @property
    def wire(self) -> int:
        return frame_wire_len(self.frame)


@dataclass
class TraceResult:
    bin_s: float
    delivered: dict[str, np.ndarray]  # stream -> line-rate bytes delivered, per bin of the time they were sent
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
        ffs = shim(encode(s.rf), constants.FLAG_RI) if s.labelled else None
        frame = ipv4_frame(src, dst, s.packet_size, ffs)
        if s.ip_len is not None:  # the frame keeps its real size (pacing, queues, delivered bytes)
            frame = lie_ip_len(frame, s.ip_len)
        stop = duration_s if s.stop is None else min(s.stop, duration_s)
        out.append(
            TraceStream(
                s.name,
                first.node,
                topo.nodes[first.node].interfaces[first.ingress].port,
                frame,
                s.demand,
                s.start,
                stop,
            )
        )
    return out


def _arrivals(s: TraceStream, rng: random.Random, poisson: bool, jitter: bool = False):
    """Constant spacing, Poisson, or (jitter) uniform in [0.5, 1.5) of the mean gap, as CSFQ's UDP
    sources: deterministic spacing phase-locks with a tail-drop queue and starves some flows."""
    gap = s.wire * 8 / s.rate_bps
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
    csfq=None,
    jitter: bool = False,
) -> TraceResult:
    """Run [0, duration_s) of the scenario; the pipelines see times start_s + t, so a second run
    on the same pipelines continues their clocks (estimators, queues and agents keep their state)."""
    streams = streams_from_topology(topo, duration_s)
    rng = random.Random(seed)
    nbins = int(np.ceil(duration_s / bin_s)) + 1
    res = TraceResult(
        bin_s, {s.name: np.zeros(nbins) for s in streams}, {s.name: 0 for s in streams}, {s.name: 0 for s in streams}
    )
    stream_rngs = [random.Random(rng.random()) for _ in streams]
    run_ = _Run(
        streams,
        stream_rngs,
        pipelines,
        links(topo),
        res,
        duration_s,
        period_s,
        on_period,
        poisson,
        jitter,
        bin_s,
        progress,
        start_s,
    )
    if csfq is None and all(isinstance(p, FastPipeline) for p in pipelines.values()):
        return _run_compiled(run_)
    if csfq is not None:
        csfq.attach(pipelines, start_s)
    return _run_interpreted(run_, csfq)


@dataclass
class _Run:
    """One call of `run`, for either loop: what runs, what it fills, and the period clock that
    calls `on_period` at each boundary of virtual time up to the end."""

    streams: list[TraceStream]
    stream_rngs: list[random.Random]
    pipelines: dict[str, Pipeline]
    links: dict[tuple[str, int], tuple[str, int]]
    res: TraceResult
    duration_s: float
    period_s: float
    on_period: Callable[[int], object] | None
    poisson: bool
    jitter: bool
    bin_s: float
    progress: Callable[[float], None] | None
    start_s: float
    next_period: float = field(init=False)

    def __post_init__(self) -> None:
        self.next_period = self.period_s

    def periods_until(self, t: float) -> float:
        """Run `on_period` at every boundary up to t (none after the end); the next boundary."""
        while t >= self.next_period and self.next_period <= self.duration_s:
            self._period()
        return self.next_period

    def finish(self) -> TraceResult:
        """The boundaries left once no packet is (the run ends at duration_s, packets or not)."""
        while self.next_period <= self.duration_s + 1e-12:
            self._period()
        return self.res

    def _period(self) -> None:
        if self.on_period is not None:
            now_ns = int((self.start_s + self.next_period) * 1e9)
            self.res.periods.append({"t": self.next_period, "value": self.on_period(now_ns)})
        self.next_period += self.period_s


def links(topo: Topology) -> dict[tuple[str, int], tuple[str, int]]:
    """The links between nodes: (node, egress port) -> (next node, its ingress port)."""
    links: dict[tuple[str, int], tuple[str, int]] = {}
    for n in topo.nodes.values():
        for i in n.interfaces.values():
            if i.peer:
                pn, pi = i.peer.split(".")
                links[(n.name, i.port)] = (pn, topo.nodes[pn].interfaces[pi].port)
    return links


# per packet: each branch is one arrival's path through a node, inline (a helper would cost a call a packet)
def _run_interpreted(run: _Run, csfq) -> TraceResult:  # noqa: C901
    """The event loop in Python, for pipelines the C loop cannot run (or with CSFQ's labels)."""
    streams, pipelines, links, res, bin_s, start_s = (
        run.streams,
        run.pipelines,
        run.links,
        run.res,
        run.bin_s,
        run.start_s,
    )
    duration_s, progress = run.duration_s, run.progress
    gens = [_arrivals(s, r, run.poisson, run.jitter) for s, r in zip(streams, run.stream_rngs, strict=False)]
    wires = [s.wire for s in streams]
    # events (t, k): k < len(streams) is a stream's next arrival at its first node, else a frame in
    # flight between nodes (the slot k - len(streams), reused last-freed-first as in the C loop)
    ns = len(streams)
    heap = _first_arrivals(gens)
    flights: list[tuple[int, str, int, int, bytes, float, float]] = []  # (stream, node, port, hops, frame, sent, label)
    free: list[int] = []
    next_period = run.next_period
    next_progress = 0.0
    hop_limit = 4 * len(pipelines) + 4
    while heap:
        t, k = heapq.heappop(heap)
        if t >= next_period:
            next_period = run.periods_until(t)
        if progress is not None and t >= next_progress:
            progress(t)
            next_progress = t + duration_s / 100
        if k < ns:
            s = streams[k]
            node, port, frame, hops, sent = s.node, s.ingress_port, s.frame, 0, t
            res.sent[s.name] += 1
            res.packets += 1
            t_next = next(gens[k], None)
            if t_next is not None:
                heapq.heappush(heap, (t_next, k))
            if csfq is not None:
                csfq.begin(s.name, t, wires[k] * 8)
        else:
            slot = k - ns
            k, node, port, hops, frame, sent, label = flights[slot]
            free.append(slot)
            s = streams[k]
            if csfq is not None:
                csfq.carry(label, wires[k] * 8)
        r = pipelines[node].process(frame, port, int((start_s + t) * 1e9))
        if r.egress_port is None:
            if csfq is not None and r.drop_reason == DROP_TM:
                csfq.tm_overflow()
            res.dropped[s.name] += 1
            continue
        td = r.depart_ns / 1e9 - start_s
        nxt = links.get((node, r.egress_port))
        if nxt is None:
            res.delivered[s.name][int(sent / bin_s)] += wires[k]
            continue
        hops += 1
        if hops > hop_limit:
            raise RuntimeError("forwarding loop between nodes")
        slot = free.pop() if free else len(flights)
        entry = (k, nxt[0], nxt[1], hops, r.frame, sent, csfq.current_label if csfq is not None else 0.0)
        if slot == len(flights):
            flights.append(entry)
        else:
            flights[slot] = entry
        heapq.heappush(heap, (td, ns + slot))
    return run.finish()


def _first_arrivals(gens: list[Iterator[float]]) -> list[tuple[float, int]]:
    """The event heap with each stream's first arrival (t, stream index); a stream with none is left out."""
    heap: list[tuple[float, int]] = []
    for k, g in enumerate(gens):
        t = next(g, None)
        if t is not None:
            heap.append((t, k))
    heapq.heapify(heap)
    return heap


def _run_compiled(run: _Run) -> TraceResult:
    """The loop of `run` in C (`_fastpath.Trace`), packet for packet the same: the same arrival
    times from the same generators, the same order, the same pipelines (and their TMs) and links.
    Control returns here at every period boundary for `on_period`."""
    streams, pipelines, res = run.streams, run.pipelines, run.res
    names = list(pipelines)
    index = {n: i for i, n in enumerate(names)}
    pipes = [pipelines[n] for n in names]
    tr = _fastpath.Trace(
        tuple(p.engine for p in pipes),  # type: ignore[attr-defined]
        [
            (
                index[s.node],
                s.ingress_port,
                s.frame,
                s.wire,
                s.wire * 8 / s.rate_bps,
                s.start_s,
                s.stop_s,
                r.getstate()[1],
                res.delivered[s.name],
            )
            for s, r in zip(streams, run.stream_rngs, strict=False)
        ],
        [(index[a], ap, index[b], bp) for (a, ap), (b, bp) in run.links.items() if a in index and b in index],
        1 if run.poisson else 2 if run.jitter else 0,
        run.start_s,
        run.bin_s,
    )

    def sync_out() -> None:
        packets, sent, dropped = tr.counts()
        res.packets = packets
        for s, a, b in zip(streams, sent, dropped, strict=False):
            res.sent[s.name], res.dropped[s.name] = a, b

    while True:
        for p in pipes:
            p.sync()  # type: ignore[attr-defined]  # control writes since the last period
        top = tr.run_until(run.next_period if run.next_period <= run.duration_s else math.inf)
        if top is None:
            break
        sync_out()
        run.periods_until(top)
        if run.progress is not None:
            run.progress(top)
    sync_out()
    return run.finish()


# --- one pipeline, any frames: synthetic arrivals or a pcap ---------------------------------------


@dataclass(frozen=True)
class Arrival:
    """One frame entering the pipeline at virtual time `t_s` on `port`; `stream` names whose it is
    (for the per-stream accounting of the result)."""

    t_s: float
    port: int
    frame: bytes
    stream: str = ""


@dataclass
class ReplayResult:
    bin_s: float
    accepted: dict[str, np.ndarray]  # stream -> line-rate bytes (as they arrived) forwarded, per bin of arrival
    egress: dict[int, np.ndarray]  # egress port -> line-rate bytes (as they left) per bin of arrival
    sent: dict[str, int]
    dropped: dict[str, dict[str, int]]  # stream -> drop reason -> packets
    packets: int = 0
    periods: list[dict] = field(default_factory=list)

    def rate_bps(self, stream: str, t0: float, t1: float) -> float:
        a, b = int(round(t0 / self.bin_s)), int(round(t1 / self.bin_s))
        return float(self.accepted[stream][a:b].sum()) * 8 / (t1 - t0)


def replay(
    pipeline: Pipeline,
    arrivals: Iterable[Arrival],
    duration_s: float,
    *,
    period_s: float = 0.01,
    on_period: Callable[[int, Driver], object] | None = None,
    driver: Driver | None = None,
    bin_s: float = 0.01,
    start_s: float = 0.0,
) -> ReplayResult:
    """Feed time-ordered arrivals in [0, duration_s) through one pipeline. Every `period_s` of
    virtual time, `on_period(now_ns, driver)` runs first (the agent's step; `driver` defaults to a
    LocalDriver of the pipeline). The pipeline sees times start_s + t."""
    drv = driver if driver is not None else LocalDriver(pipeline)
    nbins = int(np.ceil(duration_s / bin_s)) + 1
    res = ReplayResult(bin_s, {}, {}, {}, {})
    next_period = period_s
    last_t = -math.inf
    process = pipeline.process
    for a in arrivals:
        t = a.t_s
        if t < last_t:
            raise ValueError(f"arrivals must be in time order ({t} after {last_t})")
        if t >= duration_s:
            break
        last_t = t
        while t >= next_period and next_period <= duration_s:
            if on_period is not None:
                res.periods.append({"t": next_period, "value": on_period(int((start_s + next_period) * 1e9), drv)})
            next_period += period_s
        acc = res.accepted.get(a.stream)
        if acc is None:
            acc = res.accepted[a.stream] = np.zeros(nbins)
            res.sent[a.stream] = 0
            res.dropped[a.stream] = {}
        res.sent[a.stream] += 1
        res.packets += 1
        r = process(a.frame, a.port, int((start_s + t) * 1e9))
        if r.egress_port is None:
            d = res.dropped[a.stream]
            d[r.drop_reason] = d.get(r.drop_reason, 0) + 1
            continue
        b = int(t / bin_s)  # the bin of its arrival, as the exact allocation's windows count
        acc[b] += frame_wire_len(a.frame)
        eg = res.egress.get(r.egress_port)
        if eg is None:
            eg = res.egress[r.egress_port] = np.zeros(nbins)
        eg[b] += frame_wire_len(r.frame)
    while next_period <= duration_s + 1e-12:
        if on_period is not None:
            res.periods.append({"t": next_period, "value": on_period(int((start_s + next_period) * 1e9), drv)})
        next_period += period_s
    return res


def stream_arrivals(
    port: int,
    frame: bytes,
    rate_bps: float,
    start_s: float,
    stop_s: float,
    *,
    stream: str = "",
    seed: int = 1,
    poisson: bool = False,
) -> Iterator[Arrival]:
    """A stream of one frame repeated at `rate_bps` (a line rate: `frame_wire_len` bytes per frame),
    constant spacing with a random phase or Poisson; merge several with `merge`."""
    rng = random.Random(seed)
    gap = frame_wire_len(frame) * 8 / rate_bps
    t = start_s + rng.random() * gap
    while t < stop_s:
        yield Arrival(t, port, frame, stream)
        t += rng.expovariate(1 / gap) if poisson else gap


def merge(*streams: Iterable[Arrival]) -> Iterator[Arrival]:
    """Time-ordered merge (ties: the stream given first)."""
    return heapq.merge(*streams, key=lambda a: a.t_s)


PCAP_MAGIC = {
    b"\xd4\xc3\xb2\xa1": ("<", 1000),
    b"\xa1\xb2\xc3\xd4": (">", 1000),  # µs: ns per unit
    b"\x4d\x3c\xb2\xa1": ("<", 1),
    b"\xa1\xb2\x3c\x4d": (">", 1),
}  # ns
LINKTYPE_ETHERNET = 1


class PcapError(ValueError):
    pass


def read_pcap(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """(timestamp in ns, frame) from a classic pcap file of Ethernet frames (µs or ns)."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            raise PcapError(f"{path}: not a pcap file (too short)")
        if head[:4] == b"\x0a\x0d\x0d\x0a":
            raise PcapError(f"{path}: pcapng is not read here; convert it: editcap -F pcap IN OUT")
        if head[:4] not in PCAP_MAGIC:
            raise PcapError(f"{path}: not a pcap file (magic {head[:4].hex()})")
        endian, unit = PCAP_MAGIC[head[:4]]
        (linktype,) = struct.unpack(endian + "I", head[20:24])
        if linktype & 0x0FFFFFFF != LINKTYPE_ETHERNET:
            raise PcapError(f"{path}: link type {linktype}, only Ethernet (1) is replayed")
        rec = struct.Struct(endian + "IIII")
        while True:
            h = f.read(16)
            if not h:
                return
            if len(h) < 16:
                raise PcapError(f"{path}: truncated record header")
            sec, frac, incl, _orig = rec.unpack(h)
            data = f.read(incl)
            if len(data) < incl:
                raise PcapError(f"{path}: truncated record")
            yield sec * 1_000_000_000 + frac * unit, data


def source_of(frame: bytes) -> str:
    """The default stream of a frame: its IPv4/IPv6 source address ("-" for anything else)."""
    off = 14
    etype = frame[12:14]
    if etype == b"\x81\x00" and len(frame) >= 18:
        etype, off = frame[16:18], 18
    if etype == b"\x08\x00" and len(frame) >= off + 20:
        return str(ipaddress.IPv4Address(frame[off + 12 : off + 16]))
    if etype == b"\x86\xdd" and len(frame) >= off + 40:
        return str(ipaddress.IPv6Address(frame[off + 8 : off + 24]))
    return "-"


def pcap_arrivals(
    path: str | Path,
    port: int,
    *,
    line_rate_bps: float | None = None,
    speed: float = 1.0,
    stream_of: Callable[[bytes], str] = source_of,
) -> Iterator[Arrival]:
    """A pcap's frames entering `port`, from virtual time 0: at their capture times divided by
    `speed`, or, with `line_rate_bps`, back to back at that rate in capture order (each frame starts
    as the previous one's serialization ends; the capture times and `speed` play no part)."""
    t0: int | None = None
    free_at = 0.0
    for ts, frame in read_pcap(path):
        if t0 is None:
            t0 = ts
        if line_rate_bps is not None:
            t = free_at
            free_at = t + frame_wire_len(frame) * 8 / line_rate_bps
        else:
            t = (ts - t0) / 1e9 / speed
        yield Arrival(t, port, frame, stream_of(frame))


def write_pcap(path: str | Path, frames: Iterable[tuple[float, bytes]], epoch_s: int = 0) -> None:
    """A classic pcap (ns timestamps from `epoch_s` on, Ethernet) of (seconds, frame) pairs."""
    with open(path, "wb") as f:
        f.write(b"\x4d\x3c\xb2\xa1" + struct.pack("<HHiIII", 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET))
        for t, frame in frames:
            ns = epoch_s * 1_000_000_000 + round(t * 1e9)
            f.write(struct.pack("<IIII", ns // 10**9, ns % 10**9, len(frame), len(frame)) + frame)
