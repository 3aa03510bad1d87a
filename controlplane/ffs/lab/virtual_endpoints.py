# SPDX-License-Identifier: Apache-2.0
"""Transfers through the software switch in virtual time: the endpoints' state machines
(`ffs.lab.endpoint.transport`, `ffs.lab.endpoint.rate`) exchange packets with one node's pipeline, whose
agent runs its τ loop every control period, all on one deterministic event clock. This is how the
convergence of MinLoss is tested at 10–100 Gb/s (tests/switch/test_endpoint_virtual.py).

    from ffs.lab.virtual_endpoints import Flow, run
    res = run(topology, "s1", [Flow("a", "h1", "h3", 50_000_000, "minloss")], duration_s=0.3)

The forward path is host → node (ingress port of the sender's interface) → FFS decision → a FIFO at
the egress's line rate → receiver; each link adds `one_way_s / 2`. Acknowledgements return over an
uncongested path of `one_way_s` that bypasses the node (the reverse pair carries only ACKs, which
never congest it). Everything is deterministic for a seed.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ffs.agent.core import Agent
from ffs.core import constants
from ffs.core.frames import ipv4_frame, shim
from ffs.core.program import LpfConfig
from ffs.core.topology import Topology
from ffs.lab.endpoint.rate import Controller, MinLoss, MinLossParams, MinTime
from ffs.lab.endpoint.transport import Receiver, Sender
from ffs.lab.endpoint.wire import OVERHEAD, parse_shim
from ffs.switch.driver import LocalDriver
from ffs.switch.fast import new_pipeline

ETH = 14
IP_HDR = 20


@dataclass
class Flow:
    """One transfer from host `src` to host `dst` of `topology.hosts`."""

    name: str
    src: str
    dst: str
    size_bytes: int
    scheme: str = "minloss"  # "minloss", "mintime", or use `controller`
    start_s: float = 0.0
    controller: Callable[[float, float], Controller] | None = None  # (capacity, start time) -> controller


@dataclass
class FlowResult:
    name: str
    scheme: str
    size_bytes: int
    start_s: float
    finish_s: float | None
    capacity_bps: float
    sent: int
    retransmitted: int
    lost: int
    router_drops: int
    delivered: int
    echoes: int
    send_bps: np.ndarray  # IP bytes handed to the network per bin, as bit/s
    drop_bps: np.ndarray  # IP bytes dropped at the node per bin, as bit/s
    rate_steps: list[tuple[float, float]]  # (time, controller rate) at every change

    @property
    def transfer_s(self) -> float | None:
        return None if self.finish_s is None else self.finish_s - self.start_s

    @property
    def goodput_bps(self) -> float | None:
        t = self.transfer_s
        return self.size_bytes * 8 / t if t else None

    @property
    def loss(self) -> float:
        """Router drops over packets sent (the paper's loss rate, Figure 5)."""
        return self.router_drops / self.sent if self.sent else 0.0

    def summary(self) -> dict:
        return {
            "flow": self.name,
            "scheme": self.scheme,
            "bytes": self.size_bytes,
            "start_s": self.start_s,
            "transfer_s": self.transfer_s,
            "goodput_bps": self.goodput_bps,
            "sent": self.sent,
            "retransmitted": self.retransmitted,
            "lost": self.lost,
            "router_drops": self.router_drops,
            "loss": self.loss,
        }


@dataclass
class VirtualResult:
    bin_s: float
    flows: list[FlowResult]
    tau: list[tuple[float, float]] = field(default_factory=list)  # (t, τ or inf) of the flows' egress
    deliveries: list[tuple[str, int, float, int]] = field(default_factory=list)  # record=True: (flow, seq, sent, rri)
    events: int = 0

    def flow(self, name: str) -> FlowResult:
        return next(f for f in self.flows if f.name == name)


@dataclass
class _FlowState:
    flow: Flow
    port: int  # the node's ingress port of the sender
    snd: Sender
    rcv: Receiver
    frames: dict[int, bytes]  # IP size -> frame
    cap: float
    send: np.ndarray
    drop: np.ndarray
    steps: list[tuple[float, float]]
    wake: float = math.inf  # the pending SEND event (others are stale)
    timer: float = math.inf  # the pending TIMER event
    drops: int = 0
    delivered: int = 0


def _host_port(topo: Topology, node: str, host: str) -> tuple[int, str, float]:
    h = topo.hosts[host]
    n, i = h.attach.split(".")
    if n != node:
        raise ValueError(f"host {host} is attached to {n}, not {node}")
    itf = topo.nodes[n].interfaces[i]
    return itf.port, h.address.split("/")[0], itf.capacity


def _check_mtu(topo: Topology, node: str, host: str, ip_size: int) -> None:
    """A packet above its port's IP MTU cannot cross the port's MAC (spec §4): refused in one line."""
    i = topo.hosts[host].attach.split(".")[1]
    mtu = topo.nodes[node].interfaces[i].mtu
    if ip_size > mtu:
        raise ValueError(f"ip_size {ip_size} exceeds the IP MTU {mtu} of {node}.{i} ({host}'s port): set its mtu")


def default_controller(scheme: str, capacity: float, t0: float, settle_s: float, confirm_s: float = 0.0) -> Controller:
    if scheme == "mintime":
        return MinTime(capacity)
    if scheme == "minloss":
        return MinLoss(
            MinLossParams(start_bps=capacity / 10, capacity_bps=capacity, settle_s=settle_s, confirm_s=confirm_s), t0
        )
    raise ValueError(f"unknown scheme {scheme!r} (minloss or mintime)")


def run(
    topo: Topology,
    node: str,
    flows: list[Flow],
    *,
    duration_s: float,
    seed: int = 1,
    period_s: float = 0.005,
    lpf: LpfConfig = LpfConfig(),
    one_way_s: float = 0.0002,
    ip_size: int = 9000,
    queue_ms: float = 1.0,
    bin_s: float = 0.005,
    settle_s: float | None = None,
    record: bool = False,
) -> VirtualResult:
    """Run `flows` for `duration_s` of virtual time (or until all finish). MinLoss ignores echoes of
    packets sent within `settle_s` of a rate change (default: two control periods plus the F
    estimator's time constant, the age of the node's oldest measurement). With `record`, every
    delivered data packet is listed with the rri the node wrote into it."""
    lpf = lpf.for_node(topo.node(node))  # the estimator as the agent sizes it
    if settle_s is None:
        settle_s = 2 * period_s + (lpf.time_constant_ns or 0.0) / 1e9
    pipe = new_pipeline(seed)
    agent = Agent(LocalDriver(pipe), topo, node, lpf=lpf)
    agent.install()
    nb = int(math.ceil(duration_s / bin_s)) + 1
    paced: set[int] = set()  # the destinations' ports, paced at their capacity by the pipeline's TM
    st = [
        _flow_state(topo, node, k, f, pipe, paced, nb, settle_s, period_s, ip_size, queue_ms)
        for k, f in enumerate(flows)
    ]
    sim = _Events(agent, pipe, flows, st, paced, period_s, one_way_s, bin_s, record)
    sim.res.events = sim.loop(duration_s)
    for f, s in zip(flows, st, strict=True):
        sim.res.flows.append(_flow_result(f, s, bin_s))
    return sim.res


def _flow_state(
    topo: Topology,
    node: str,
    k: int,
    f: Flow,
    pipe: Any,
    paced: set[int],
    nb: int,
    settle_s: float,
    period_s: float,
    ip_size: int,
    queue_ms: float,
) -> _FlowState:
    """Flow k's sender, receiver and frames; the first flow to a destination paces its port."""
    port, src_ip, cap = _host_port(topo, node, f.src)
    dport, dst_ip, dcap = _host_port(topo, node, f.dst)
    for host in (f.src, f.dst):
        _check_mtu(topo, node, host, ip_size)
    ctl = (
        f.controller(cap, f.start_s)
        if f.controller
        else default_controller(f.scheme, cap, f.start_s, settle_s, period_s)
    )
    snd = Sender(f.size_bytes, ip_size - OVERHEAD, ctl, xfer=k + 1)
    frames = {
        sz: ipv4_frame(src_ip, dst_ip, sz, shim(constants.CODE_ONE, constants.FLAG_RI, 17))
        for sz in {snd.size_of(0), snd.size_of(snd.npkts - 1)}
    }
    if dport not in paced:
        paced.add(dport)
        pipe.tm.configure(dport, dcap, max(3 * (ip_size + 38), int(dcap * queue_ms / 8e3)))
    return _FlowState(
        f, port, snd, Receiver(), frames, cap, np.zeros(nb), np.zeros(nb), [(f.start_s, ctl.rate(f.start_s))]
    )


def _flow_result(f: Flow, s: _FlowState, bin_s: float) -> FlowResult:
    snd = s.snd
    return FlowResult(
        f.name,
        snd.ctl.name,
        f.size_bytes,
        f.start_s,
        snd.stats.finish,
        s.cap,
        snd.stats.sent,
        snd.stats.retransmitted,
        snd.stats.lost,
        s.drops,
        s.delivered,
        snd.stats.echoes,
        s.send * 8 / bin_s,
        s.drop * 8 / bin_s,
        s.steps,
    )


SEND, ARRIVE, DELIVER, ACK, TIMER, PERIOD = range(6)


class _Events:
    """The event queue of a run: (time, order, kind, flow, data), one handler per kind."""

    def __init__(
        self,
        agent: Agent,
        pipe: Any,
        flows: list[Flow],
        st: list[_FlowState],
        paced: set[int],
        period_s: float,
        one_way_s: float,
        bin_s: float,
        record: bool,
    ) -> None:
        self.agent, self.pipe, self.flows, self.st, self.paced = agent, pipe, flows, st, paced
        self.period_s, self.one_way_s, self.half = period_s, one_way_s, one_way_s / 2
        self.bin_s, self.record = bin_s, record
        self.heap: list[tuple[float, int, int, int, Any]] = []
        self.order = 0
        self.res = VirtualResult(bin_s, [])
        self.handlers: tuple[Callable[[float, int, int, Any], None], ...] = (
            self.on_send,
            self.on_arrive,
            self.on_deliver,
            self.on_ack,
            self.on_timer,
            self.on_period,
        )

    def push(self, t: float, kind: int, k: int, data: Any = None) -> None:
        self.order += 1
        heapq.heappush(self.heap, (t, self.order, kind, k, data))

    def reschedule(self, k: int, now: float) -> None:
        s = self.st[k]
        due = s.snd.due(now)
        if due is not None and due != s.wake:
            s.wake = due
            self.push(due, SEND, k)
        td = s.snd.timer_due()
        if td is not None and td < s.timer:
            s.timer = td
            self.push(td, TIMER, k)

    def loop(self, duration_s: float) -> int:
        """Runs events until `duration_s` or none are left; returns how many ran."""
        for k, f in enumerate(self.flows):
            self.push(f.start_s, SEND, k)
            self.st[k].wake = f.start_s
        self.push(self.period_s, PERIOD, -1)
        n_events = 0
        heap, handlers, bin_s = self.heap, self.handlers, self.bin_s
        while heap:
            t, _, kind, k, data = heapq.heappop(heap)
            if t >= duration_s:
                break
            n_events += 1
            handlers[kind](t, k, int(t / bin_s), data)
        return n_events

    def on_period(self, t: float, k: int, b: int, data: Any) -> None:
        snap = self.agent.step(t)
        for e in snap.egresses:
            if e.port in self.paced:
                self.res.tau.append((t, e.tau if e.congested else math.inf))
        self.push(t + self.period_s, PERIOD, -1)

    def on_send(self, t: float, k: int, b: int, data: Any) -> None:
        s = self.st[k]
        snd = s.snd
        if t != s.wake:
            return  # superseded
        s.wake = math.inf
        due = snd.due(t)
        if snd.done or due is None:
            return
        if due > t:
            self.reschedule(k, t)
            return
        seq = snd.send(t)
        size = snd.size_of(seq)
        s.send[b] += size
        self.push(t + self.half, ARRIVE, k, seq)
        self.reschedule(k, t)

    def on_arrive(self, t: float, k: int, b: int, data: Any) -> None:
        s = self.st[k]
        snd = s.snd
        seq = data
        size = snd.size_of(seq)
        r = self.pipe.process(s.frames[size], s.port, int(t * 1e9))
        if r.egress_port is None or r.frame is None:  # γ, or the destination port's queue
            s.drops += 1
            s.drop[b] += size
            return
        sh = parse_shim(r.frame[ETH + IP_HDR :])
        self.push(r.depart_ns / 1e9 + self.half, DELIVER, k, (seq, sh.rri))
        if self.record:
            self.res.deliveries.append((f"{self.flows[k].name}", seq, float(snd.sent_at[seq]), sh.rri))

    def on_deliver(self, t: float, k: int, b: int, data: Any) -> None:
        s = self.st[k]
        snd = s.snd
        seq, rri = data
        s.delivered += 1
        ack = s.rcv.on_data(t, snd.xfer, seq, snd.total, b"", snd.payload, rri)
        if ack is not None:
            self.push(t + self.one_way_s, ACK, k, (ack, s.rcv.latest_rri))

    def on_ack(self, t: float, k: int, b: int, data: Any) -> None:
        s = self.st[k]
        snd = s.snd
        ack, echo = data
        before = snd.ctl.rate(t)
        snd.on_ack(t, ack, echo)
        after = snd.ctl.rate(t)
        if after != before:
            s.steps.append((t, after))
        self.reschedule(k, t)

    def on_timer(self, t: float, k: int, b: int, data: Any) -> None:
        s = self.st[k]
        if t != s.timer:
            return
        s.timer = math.inf
        s.snd.on_timer(t)
        self.reschedule(k, t)
