# SPDX-License-Identifier: Apache-2.0
"""The quarantine judges on evidence and remembers (spec §9; docs/security.md): the dumbbell
(topologies/dumbbell.yaml) in virtual time, the agent as live (100 ms period, telemetry every
second), the software switch in Tofino's order (the TM queue before the frame check), the guard on.

- One odd frame (a bit error the FCS missed upstream, a middlebox) quarantines no pair, however
  little the pair sends; three lying frames over its last judgements do.
- A repeat liar's quarantine grows: lying for 0.2 s every 15 s for a minute, its second offence
  holds it for 20 s (2 × quarantine_s), across its third onset; the victim's cost over the minute
  stays within 1 % of what it asks.
- Ten minutes of honest mixed traffic (IPv4 and IPv6, 802.1Q tags, trusted labels from 1/8 to 8,
  64 to 9000 bytes, bursts and lulls) quarantine nobody.
"""

from __future__ import annotations

import random

from conftest import TOPOLOGIES
from ffs.agent.core import Agent
from ffs.core.frames import ipv4_frame, ipv6_frame, lie_ip_len, shim
from ffs.core.labels import encode
from ffs.core.topology import load
from ffs.lab.attacks import loads
from ffs.switch import fast
from ffs.switch.driver import LocalDriver
from ffs.switch.tm import configure_node
from ffs.switch.trace import Arrival, frame_wire_len, merge, replay, stream_arrivals

M = 1e6
VICTIM = ipv4_frame("10.0.1.1", "10.0.3.1", 1250)
NEIGHBOUR = ipv4_frame("10.0.2.1", "10.0.3.1", 1250)


def dumbbell(topo=None, seed: int = 1):
    topo = topo or load(TOPOLOGIES / "dumbbell.yaml")
    pipe = fast.new_pipeline(seed)
    configure_node(pipe.tm, topo.node("s1"))
    agent = Agent(LocalDriver(pipe), topo, "s1")
    agent.install(now_s=0.0)
    return pipe, agent


def run(pipe, agent, arrivals, duration: float, watch=None):
    def on_period(now_ns: int, _driver) -> None:
        agent.step(now_ns / 1e9)
        if watch is not None:
            watch(now_ns / 1e9, agent)

    return replay(pipe, merge(*arrivals), duration, period_s=0.1, bin_s=0.1, on_period=on_period)


def test_one_odd_frame_quarantines_no_pair_three_lies_do():
    """A pair sending 10 frames a second (100 kb/s of its 10 Mb/s share): one frame that lies is
    12 % of its bytes in that second, far over the 1 % threshold, and no evidence; three in a row
    are. Caught: a quarantine on one frame (LYING_FRAMES = 1)."""
    pipe, agent = dumbbell()
    odd = [Arrival(2.05, 2, lie_ip_len(NEIGHBOUR, 20), "neighbour")]
    honest = stream_arrivals(2, NEIGHBOUR, 10 * 1288 * 8, 0.0, 6.0, stream="neighbour", seed=3)
    lies = [Arrival(4.05 + 0.1 * k, 2, lie_ip_len(NEIGHBOUR, 20), "neighbour") for k in range(3)]
    held: list[float] = []
    res = run(pipe, agent, [honest, iter(odd), iter(lies)], 6.0, lambda t, a: held.extend([t] if a.quarantined else []))
    assert res.dropped["neighbour"].get("malformed", 0) == 4
    assert not [t for t in held if t < 4.0], held
    assert held and held[0] <= 4.4, held  # the third lie's period


def test_a_repeat_liar_is_held_longer_each_time():
    """The neighbour's frames lie (claiming 20 of their 1250 bytes, at its port's 20 Mb/s) for 0.2 s
    every 15 s, honest (10 Mb/s) in between; quarantine_s is 10 s. Its first offence holds it to
    ~10 s, its second to ~35 s, across the third onset at 30 s (caught: REPEAT_MAX = 1, which
    releases it at ~25 s). The victim asks 8 Mb/s of its 10 Mb/s share and gets ≥ 99 % of it over
    the minute (Corollary 1, less the onsets): ≥ 99 % of what it sent."""
    pipe, agent = dumbbell()
    arrivals = [stream_arrivals(1, VICTIM, 8 * M, 0.0, 60.0, stream="victim", seed=1, poisson=True)]
    t = 0.0
    for k, onset in enumerate((0.0, 15.0, 30.0, 45.0)):
        if onset > t:
            arrivals.append(stream_arrivals(2, NEIGHBOUR, 10 * M, t, onset, stream="neighbour", seed=10 + k))
        arrivals.append(
            stream_arrivals(2, lie_ip_len(NEIGHBOUR, 20), 20 * M, onset, onset + 0.2, stream="liar", seed=20 + k)
        )
        t = onset + 0.2
    arrivals.append(stream_arrivals(2, NEIGHBOUR, 10 * M, t, 60.0, stream="neighbour", seed=30))
    held_at: dict[float, bool] = {}
    res = run(pipe, agent, arrivals, 60.0, lambda now, a: held_at.update({round(now, 1): bool(a.quarantined)}))
    assert held_at[8.0] and not held_at[12.0]  # the first offence: quarantine_s
    assert held_at[29.9] and held_at[30.0], "the second offence holds it across the third onset"
    # what it sent (Poisson: the count alone varies by 0.5 %), against what it got
    sent = res.sent["victim"] * frame_wire_len(VICTIM) * 8 / 60.0
    assert res.rate_bps("victim", 0.0, 60.0) >= 0.99 * sent


def test_ten_minutes_of_honest_mixed_traffic_quarantine_nobody():
    """Trusted labels (the neighbour's port trusts them) from 1/8 to 8, IPv4 and IPv6, tagged and
    untagged, 64 to 9000 bytes on 9000-byte MTUs, on/off bursts; the sender on p1 likewise. Not one
    frame is malformed, not one pair quarantined."""
    topo = loads(
        """
name: soak
nodes:
  s1:
    interfaces:
      p1: {capacity: 20Mbps, port: 1, mtu: 9000}
      p2: {capacity: 20Mbps, port: 2, mtu: 9000, trust: true}
      p3: {capacity: 20Mbps, port: 3, mtu: 9000}
    fairness:
      p3: {p1: 10Mbps, p2: 10Mbps}
    routes:
      - {prefix: 10.0.3.0/24, interface: p3}
      - {prefix: "fd00::/64", interface: p3}
streams: []
"""
    )
    pipe, agent = dumbbell(topo)
    rng = random.Random(7)
    arrivals = []
    for k in range(60):  # 10 s bursts and lulls, a new mix each
        t0 = k * 10.0
        for port, src, rate in ((1, "10.0.1.1", 6 * M), (2, "10.0.2.1", 14 * M)):
            size = rng.choice([64, 576, 1500, 4000, 9000])
            label = encode(rng.choice([0.125, 0.5, 1.0, 2.0, 8.0]))
            vlan = rng.choice([None, 7])
            if rng.random() < 0.3:
                frame = ipv6_frame(f"fc00::{port}", "fd00::3", max(size - 58, 8), shim(label), vlan=vlan)
            else:
                frame = ipv4_frame(src, "10.0.3.1", max(size - 18, 28), shim(label), vlan=vlan)
            on = rng.uniform(2.0, 10.0)
            arrivals.append(stream_arrivals(port, frame, rate * rng.uniform(0.2, 1.5), t0, t0 + on, stream=src, seed=k))
    quarantined: list[float] = []
    res = run(pipe, agent, arrivals, 600.0, lambda t, a: quarantined.extend([t] if a.quarantined else []))
    assert not quarantined, quarantined[:5]
    assert not any(r.get("malformed") for r in res.dropped.values()), res.dropped
    assert sum(res.sent.values()) > 1_000_000


def test_honest_labels_above_one_on_a_trusting_port_are_not_taken_for_light_claims():
    """A trusting port (an upstream FFS node's labels, here 2: the pair's bytes weigh 1/2 of what
    they cost in F) whose pair has 2 % lying bytes: λ = 2 % of its share withheld, as spec §9
    promises its honest senders (≈ 1 − λ of it), not the 1 − w = 50 % a light-claims floor read from
    F / R would take. Caught: the floor on every port (50 %)."""
    topo = loads(
        """
name: trusting
nodes:
  s1:
    interfaces:
      p1: {capacity: 20Mbps, port: 1}
      p2: {capacity: 20Mbps, port: 2, trust: true}
      p3: {capacity: 20Mbps, port: 3}
    fairness:
      p3: {p1: 10Mbps, p2: 10Mbps}
    routes:
      - {prefix: 10.0.3.0/24, interface: p3}
streams: []
"""
    )
    pipe, agent = dumbbell(topo)
    labelled = ipv4_frame("10.0.2.1", "10.0.3.1", 1250, shim(encode(2.0)))
    lying = lie_ip_len(labelled, 60)
    arrivals = [
        stream_arrivals(2, labelled, 9.8 * M, 0.0, 6.0, stream="honest", seed=1),
        stream_arrivals(2, lying, 0.2 * M, 1.0, 6.0, stream="liar", seed=2),
    ]
    run(pipe, agent, arrivals, 6.0)
    pid = next(p.pid for p in agent.pairs() if (p.ingress, p.egress) == ("p2", "p3"))
    assert pid in agent.quarantine.level, "the pair is held"
    assert agent.quarantine.level[pid] <= 0.05, agent.quarantine.level[pid]
