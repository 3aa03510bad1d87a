# SPDX-License-Identifier: Apache-2.0
"""FFS-C100 on a port that is its own bottleneck, two accountings side by side (docs/results.md,
"A port that is its own bottleneck"): A_j as ffs-agent counts it (`admitted`, in the ingress
before the traffic manager, in line rates) and as the egress could count it (`accepted`, after the
TM, in IP bytes: frame bytes less 18 per packet), to show why the agent counts in the ingress. One 100 Mb/s egress at
its own speed,
a 40 Mb/s sender with a 50 Mb/s share, a 6x flood, both at one packet size, in virtual time with
the software switch's TM.

    python bench/tm_saturation.py [--sizes 64,576,1500,9000] [--duration 1.0] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ffs.agent.core import Agent
from ffs.core import p4names
from ffs.core.frames import ipv4_frame
from ffs.lab.attacks import loads
from ffs.switch import fast
from ffs.switch.driver import LocalDriver
from ffs.switch.tm import configure_node
from ffs.switch.trace import merge, replay, stream_arrivals

M = 1e6
CAP, SHARE, DEMAND = 100 * M, 50 * M, 40 * M


def topology(size: int) -> str:
    mtu = max(size, 1500)
    return f"""
name: c100
nodes:
  s1:
    interfaces:
      p1: {{capacity: {CAP:.0f}, port: 1, mtu: {mtu}}}
      p2: {{capacity: {6 * CAP:.0f}, port: 2, mtu: {mtu}}}
      p3: {{capacity: {CAP:.0f}, port: 3, mtu: {mtu}}}
    fairness:
      p3: {{p1: {SHARE:.0f}, p2: {CAP - SHARE:.0f}}}
    routes:
      - {{prefix: 10.0.3.0/24, interface: p3}}
"""


class EgressAccounting(Agent):
    """The agent with egress accounting: A_j from the egress's `accepted` and `malformed` (after
    the TM), rates in IP bytes."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, wire_overhead_bytes=-18, **kw)

    def _measure(self, name, counter, indices, now_s):  # type: ignore[override]
        if counter == p4names.ADMITTED.name:
            acc, dt = super()._measure(name, p4names.ACCEPTED.name, indices, now_s)
            bad, _ = super()._measure("X'", p4names.MALFORMED.name, indices, now_s)
            return {i: type(v)(v.packets + bad[i].packets, v.bytes + bad[i].bytes) for i, v in acc.items()}, dt
        return super()._measure(name, counter, indices, now_s)


def run(size: int, agent_cls: type[Agent], duration: float) -> dict[str, float]:
    topo = loads(topology(size))
    pipe = fast.new_pipeline(1)
    configure_node(pipe.tm, topo.node("s1"))
    agent = agent_cls(LocalDriver(pipe), topo, "s1")
    agent.install(now_s=0.0)
    good, bad = ipv4_frame("10.0.1.1", "10.0.3.1", size), ipv4_frame("10.0.2.1", "10.0.3.1", size)
    arrivals = [
        stream_arrivals(1, good, DEMAND, 0, duration, stream="sender", seed=1),
        stream_arrivals(2, bad, 6 * CAP, 0, duration, stream="flood", seed=2),
    ]
    res = replay(pipe, merge(*arrivals), duration, period_s=0.005, on_period=lambda ns, d: agent.step(ns / 1e9))
    return {
        "sender": res.rate_bps("sender", duration / 2, duration),
        "flood": res.rate_bps("flood", duration / 2, duration),
        "tau": agent.taus["p3"].tau,
        "tm_drops": int(pipe.tm.drops[3]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="64,576,1500,9000")
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for size in (int(x) for x in args.sizes.split(",")):
        for name, cls in (("admitted (ingress, line rate)", Agent), ("accepted (egress, IP bytes)", EgressAccounting)):
            rows.append({"size": size, "accounting": name, **run(size, cls, args.duration)})
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    print("| packet | A_j counted | sender (of 40 Mb/s) | flood (exact 60) | τ | TM drops |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['size']} B | {r['accounting']} | {r['sender'] / M:.1f} | {r['flood'] / M:.1f} | {r['tau']:.4g} | "
            f"{r['tm_drops']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
