# SPDX-License-Identifier: Apache-2.0
"""The length-lie attack of docs/security.md as a library for its tests and its benchmark
(bench/attacks.py): the attack topology and a replay of a flood of given frames against a victim
with the agent in the loop, through the software switch in Tofino's order (γ, then the traffic
manager's queue at p3's speed, then the egress's frame check)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ffs.agent.core import Agent
from ffs.core import constants
from ffs.core.frames import ipv4_frame, lie_ip_len
from ffs.core.topology import Topology, load
from ffs.switch import fast
from ffs.switch.driver import LocalDriver
from ffs.switch.tm import configure_node
from ffs.switch.trace import ReplayResult, merge, replay, stream_arrivals

M = 1e6


def topology(
    capacity: float,
    victim: float,
    share: float,
    flood: float,
    rf: float | None,
    streams: int = 1,
    packet_size: int = 1250,
    ip_len: int | None = None,
    flood_size: int | None = None,
    flood_trust: bool = True,
) -> str:
    """s1: victim on p1 (share `share`), flood on p2 (the rest of p3's capacity) at up to p2's line
    rate, both ports trusted (`flood_trust` False: p2 resets labels, as a port to hosts). rf None:
    the flood sends no shim (labelled: false); ip_len: the flood's
    IPv4 total length field lies (says ip_len whatever its flood_size bytes). The ports' MTU fits
    the largest packet (a port drops longer frames, spec §4)."""
    per = flood / streams
    mtu = max(1500, packet_size, flood_size or 0)
    label = "labelled: false" if rf is None else f"rf: {rf!r}"
    lie = "" if ip_len is None else f", ip_len: {ip_len}"
    flows = "\n".join(
        f"  - {{name: flood{k}, path: [{{node: s1, ingress: p2, egress: p3}}], demand: {per:.0f}, {label}, "
        f"packet_size: {flood_size or packet_size}{lie}}}"
        for k in range(streams)
    )
    return f"""
name: attack
duration: 0.3
nodes:
  s1:
    interfaces:
      p1: {{capacity: {capacity:.0f}, port: 1, trust: true, mtu: {mtu}}}
      p2: {{capacity: {flood:.0f}, port: 2, trust: {str(flood_trust).lower()}, mtu: {mtu}}}
      p3: {{capacity: {capacity:.0f}, port: 3, mtu: {mtu}}}
    fairness:
      p3: {{p1: {share:.0f}, p2: {capacity - share:.0f}}}
    routes:
      - {{prefix: 10.0.3.0/24, interface: p3}}
      - {{prefix: "fd00::/8", interface: p3}}
streams:
  - {{name: victim, path: [{{node: s1, ingress: p1, egress: p3}}], demand: {victim:.0f}, packet_size: {packet_size}}}
{flows}
"""


def loads(text: str) -> Topology:
    """A topology from its text (through a file, as every topology is loaded)."""
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "attack.yaml"
        f.write_text(text)
        return load(f)


def replay_attack(
    flood_frame: bytes,
    cap: float = 100 * M,
    victim: float = 40 * M,
    share: float = 50 * M,
    flood: float = 300 * M,
    duration: float = 0.4,
    streams: int = 1,
    poisson: bool = False,
    **agent_kw: Any,
) -> tuple[ReplayResult, dict[str, float], int]:
    """The victim (p1, 1250-byte packets) and `streams` floods of `flood_frame` (p2) into s1 of
    `topology`, its agent in the loop, p3 drained at its speed (its capacity); the line rates over
    the second half and the lies the switch counted: frames the egress dropped as malformed, claims
    beyond the ingress port's frame limit the ingress dropped (spec §4). The pipeline is
    `fast.new_pipeline`'s, looked up at the call."""
    topo = loads(topology(cap, victim, share, flood, None))
    pipe = fast.new_pipeline(1)
    configure_node(pipe.tm, topo.node("s1"))
    agent = Agent(LocalDriver(pipe), topo, "s1", **agent_kw)
    agent.install()
    good = ipv4_frame("10.0.1.1", "10.0.3.1", 1250)
    arrivals = [stream_arrivals(1, good, victim, 0, duration, stream="victim", seed=1, poisson=poisson)]
    arrivals += [
        stream_arrivals(2, flood_frame, flood / streams, 0, duration, stream=f"flood{k}", seed=2 + k, poisson=poisson)
        for k in range(streams)
    ]
    res = replay(pipe, merge(*arrivals), duration, period_s=0.005, on_period=lambda now_ns, d: agent.step(now_ns / 1e9))
    t0, t1 = duration / 2, duration
    got = {"victim": res.rate_bps("victim", t0, t1)}
    for k in range(streams):
        got[f"flood{k}"] = res.rate_bps(f"flood{k}", t0, t1)
    return res, got, pipe.egress_acct.malformed.packets[3] + pipe.events.packets[constants.EVENT_CLAIM_OVERSIZE]


def replay_one_liar(
    honest: int,
    rate: float = 20 * M,
    cap: float = 100 * M,
    victim: float = 60 * M,
    share: float = 50 * M,
    duration: float = 1.0,
    liar: bool = True,
    claim: int = 20,
    poisson: bool = True,
    liar_len: int = 1250,
    resetting: bool = False,
    liar_rate: float | None = None,
    **agent_kw: Any,
) -> tuple[ReplayResult, dict[str, float], int]:
    """One neighbour (p2) carrying `honest` honest senders and, with `liar`, one sender whose
    frames of IPv4 length `liar_len` claim `claim`, every sender at `rate` (a line rate; the liar at
    `liar_rate` if given); the victim on p1. p2 trusts labels unless `resetting` (then its
    estimator weighs every frame by its claim alone, and the agent reads the pair's weight
    w = F/R, spec §9).
    The data plane sees one pair (p2, p3) for all of them: it has no per-sender state. Rates over
    the second half: "victim", "honest" (the honest senders together), "liar"; and the lies the
    switch counted: frames the egress dropped as malformed, claims beyond the ingress port's frame
    limit the ingress dropped (spec §4). Tofino's order, as `replay_attack`."""
    senders = honest + int(liar)
    topo = loads(topology(cap, victim, share, max(senders * rate, cap), None, flood_trust=not resetting))
    pipe = fast.new_pipeline(1)
    configure_node(pipe.tm, topo.node("s1"))
    agent = Agent(LocalDriver(pipe), topo, "s1", **agent_kw)
    agent.install()
    arrivals = [
        stream_arrivals(
            1, ipv4_frame("10.0.1.1", "10.0.3.1", 1250), victim, 0, duration, stream="victim", seed=1, poisson=poisson
        )
    ]
    for k in range(honest):
        arrivals.append(
            stream_arrivals(
                2,
                ipv4_frame(f"10.0.2.{k + 1}", "10.0.3.1", 1250),
                rate,
                0,
                duration,
                stream=f"honest{k}",
                seed=2 + k,
                poisson=poisson,
            )
        )
    if liar:
        arrivals.append(
            stream_arrivals(
                2,
                lie_ip_len(ipv4_frame("10.0.2.250", "10.0.3.1", liar_len), claim),
                rate if liar_rate is None else liar_rate,
                0,
                duration,
                stream="liar",
                seed=1000,
                poisson=poisson,
            )
        )
    res = replay(pipe, merge(*arrivals), duration, period_s=0.005, on_period=lambda now_ns, d: agent.step(now_ns / 1e9))
    t0, t1 = duration / 2, duration
    got = {
        "victim": res.rate_bps("victim", t0, t1),
        "honest": sum(res.rate_bps(f"honest{k}", t0, t1) for k in range(honest) if f"honest{k}" in res.accepted),
        "liar": res.rate_bps("liar", t0, t1) if "liar" in res.accepted else 0.0,
    }
    return res, got, pipe.egress_acct.malformed.packets[3] + pipe.events.packets[constants.EVENT_CLAIM_OVERSIZE]
