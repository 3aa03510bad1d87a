# SPDX-License-Identifier: Apache-2.0
"""FFS's guarantee in time, in virtual time: a sender at exactly its share of an egress while the
other ingress floods it from an onset, or in pulses; the node as it ships (the agent's period, the
estimators sized per pair, the queue guard on), or a design to compare it with.

The expectation is the paper's: by Corollary 1 the sender keeps min(demand, M) = its share at
every moment, whatever the other ingress sends; `Reaction.share_kept` is what it got of that in a
window of time, `bench/reaction.py` and tests/switch/test_reaction.py measure it after onsets and during
pulses.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from ffs.agent.core import Agent
from ffs.core.frames import ipv4_frame, lie_ip_len
from ffs.core.program import LpfConfig
from ffs.lab.attacks import loads
from ffs.switch import fast
from ffs.switch.driver import LocalDriver
from ffs.switch.tm import configure_node
from ffs.switch.trace import Arrival, ReplayResult, merge, replay, stream_arrivals

M = 1e6


@dataclass(frozen=True)
class Design:
    """How the node reacts: the agent's period, the guard's timer (None: off), and the estimator's
    time constant (None: per pair, spec §4; a number: that one for every pair)."""

    name: str
    period_s: float = 0.1
    guard_timer_ns: int | Literal["auto"] | None = "auto"
    time_constant_ns: float | None = None


SHIPPED = Design("guard, 100 ms")
CPU_LOOPS = (Design("cpu 100 ms", 0.1, None), Design("cpu 10 ms", 0.01, None), Design("cpu 1 ms", 0.001, None))


@dataclass(frozen=True)
class Case:
    """A 100 Mb/s egress shared 50/50 by the sender's ingress and the flood's; `small_share`: a
    third ingress holding that fraction of the egress, idle (its share comes out of the flood's);
    `lie`: the flood's frames claim this IP length (spec §4: a lying length)."""

    size: int = 1500
    flood_factor: float = 10.0
    small_share: float | None = None
    lie: int | None = None
    capacity: float = 100 * M

    @property
    def share(self) -> float:
        return self.capacity / 2

    def topology(self) -> str:
        mtu = max(self.size, 1500)
        small = self.small_share * self.capacity if self.small_share else 0.0
        extra = f"\n      p4: {{capacity: {self.capacity:.0f}, port: 4, mtu: {mtu}}}" if small else ""
        shares = f"p1: {self.share:.0f}, p2: {self.share - small:.0f}" + (f", p4: {small:.0f}" if small else "")
        return f"""
name: reaction
nodes:
  s1:
    interfaces:
      p1: {{capacity: {self.capacity:.0f}, port: 1, mtu: {mtu}}}
      p2: {{capacity: {self.flood_factor * self.capacity:.0f}, port: 2, mtu: {mtu}}}
      p3: {{capacity: {self.capacity:.0f}, port: 3, mtu: {mtu}}}{extra}
    fairness:
      p3: {{{shares}}}
    routes:
      - {{prefix: 10.0.3.0/24, interface: p3}}
streams: []
"""


@dataclass
class Reaction:
    """One run: what each stream got per millisecond of virtual time, and τ per period."""

    case: Case
    design: Design
    result: ReplayResult
    lpf: LpfConfig
    taus: list[tuple[float, float, bool]] = field(default_factory=list)  # (t, τ, congested)

    def share_kept(self, t0: float, t1: float) -> float:
        """The sender's delivered rate over [t0, t1) as a fraction of its share (Corollary 1: 1)."""
        return self.result.rate_bps("sender", t0, t1) / self.case.share


def run(
    case: Case,
    design: Design,
    floods: list[tuple[float, float]],
    duration_s: float,
    *,
    seed: int = 1,
    poisson: bool = False,
) -> Reaction:
    """The sender at its share from 0 to duration_s, the flood in each (start, stop) of `floods`."""
    topo = loads(case.topology())
    pipe = fast.new_pipeline(seed)
    configure_node(pipe.tm, topo.node("s1"))
    agent = Agent(
        LocalDriver(pipe),
        topo,
        "s1",
        lpf=LpfConfig(design.time_constant_ns),
        guard_timer_ns=design.guard_timer_ns,
    )
    agent.install(now_s=0.0)
    sender = ipv4_frame("10.0.1.1", "10.0.3.1", case.size - 18)
    flood = ipv4_frame("10.0.2.1", "10.0.3.1", case.size - 18)
    if case.lie is not None:
        flood = lie_ip_len(flood, case.lie)
    rate = case.flood_factor * case.capacity
    arrivals: list[Iterator[Arrival]] = [
        stream_arrivals(1, sender, case.share, 0.0, duration_s, stream="sender", seed=seed, poisson=poisson)
    ]
    for k, (a, b) in enumerate(floods):
        arrivals.append(stream_arrivals(2, flood, rate, a, b, stream="flood", seed=seed + 1 + k, poisson=poisson))
    taus: list[tuple[float, float, bool]] = []

    def on_period(now_ns: int, _driver: object) -> None:
        e = agent.step(now_ns / 1e9).egresses[0]
        taus.append((now_ns / 1e9, e.tau, e.congested))

    res = replay(pipe, merge(*arrivals), duration_s, period_s=design.period_s, bin_s=0.001, on_period=on_period)
    return Reaction(case, design, res, agent.lpf, taus)


def pulses(first_s: float, length_s: float, every_s: float, count: int) -> list[tuple[float, float]]:
    return [(first_s + k * every_s, first_s + k * every_s + length_s) for k in range(count)]
