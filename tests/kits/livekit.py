# SPDX-License-Identifier: Apache-2.0
"""The live tests' node: a sender h1 on p1 and a flood h2 on p2, both to a receiver h3 on p3."""

from __future__ import annotations


def sender_and_flood(
    name: str,
    speed: float,
    flood_speed: float,
    share: float,
    *,
    mtu: int | None = None,
    p1: str = "",
    p3: str = "",
) -> str:
    """The topology's YAML: p1 and p3 at `speed`, p2 at `flood_speed`; p1 holds `share` of p3 and
    p2 the rest, and each way back holds p3's whole speed. `mtu` on every port where given; `p1`
    and `p3` add keys to those ports (", drain: ...", ", delay: 10ms")."""
    keys = f", mtu: {mtu}" if mtu is not None else ""
    return f"""
name: {name}
nodes:
  s1:
    interfaces:
      p1: {{capacity: {speed:.0f}, port: 1{keys}{p1}}}
      p2: {{capacity: {flood_speed:.0f}, port: 2{keys}}}
      p3: {{capacity: {speed:.0f}, port: 3{keys}{p3}}}
    fairness:
      p3: {{p1: {share:.0f}, p2: {speed - share:.0f}}}
      p1: {{p3: {speed:.0f}}}
      p2: {{p3: {speed:.0f}}}
    routes:
      - {{prefix: 10.0.1.0/24, interface: p1}}
      - {{prefix: 10.0.2.0/24, interface: p2}}
      - {{prefix: 10.0.3.0/24, interface: p3}}
hosts:
  h1: {{attach: s1.p1, address: 10.0.1.1/24, gateway: 10.0.1.254}}
  h2: {{attach: s1.p2, address: 10.0.2.1/24, gateway: 10.0.2.254}}
  h3: {{attach: s1.p3, address: 10.0.3.1/24, gateway: 10.0.3.254}}
"""
