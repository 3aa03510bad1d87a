"""Attacks on the data plane in virtual time at line rate (docs/security.md, FFS §XI): a flooding
host on a port that *trusts* labels (the worst case: hosts are untrusted by default) forges its
label across the whole code range, or splits the flood into many streams. Corollary 1: the
well-behaved sender on another ingress keeps at least min(demand, share) - here 95 % of it,
allowing for the estimators' noise - and the egress stays within 5 % of its target. The exact
allocation (ffs.allocator) gives the flood its FFS rate; no label may buy more (spec §3.1, §4)."""

from __future__ import annotations

import pytest

from ffs.experiments import run_scenario
from ffs.labels import decode
from ffs.topology import load

M = 1e6


def topology(capacity: float, victim: float, share: float, flood: float, rf: float, streams: int = 1,
             packet_size: int = 1250) -> str:
    """s1: victim on p1 (share `share`), flood on p2 (the rest of p3's capacity) at up to p2's line
    rate, both ports trusted."""
    per = flood / streams
    flows = "\n".join(
        f"  - {{name: flood{k}, path: [{{node: s1, ingress: p2, egress: p3}}], demand: {per:.0f}, rf: {rf!r}, "
        f"packet_size: {packet_size}}}" for k in range(streams))
    return f"""
name: attack
duration: 0.3
nodes:
  s1:
    interfaces:
      p1: {{capacity: {capacity:.0f}, port: 1, trust: true}}
      p2: {{capacity: {flood:.0f}, port: 2, trust: true}}
      p3: {{capacity: {capacity:.0f}, port: 3}}
    fairness:
      p3: {{p1: {share:.0f}, p2: {capacity - share:.0f}}}
    routes:
      - {{prefix: 10.0.3.0/24, interface: p3}}
streams:
  - {{name: victim, path: [{{node: s1, ingress: p1, egress: p3}}], demand: {victim:.0f}, packet_size: {packet_size}}}
{flows}
"""


def loads(text: str, tmp_path_factory=None):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "attack.yaml"
        f.write_text(text)
        return load(f)


def check(capacity: float, victim: float, share: float, flood: float, got: dict[str, float]) -> None:
    assert got["victim"] >= 0.95 * min(victim, share), got
    total = sum(got.values())
    assert total <= 1.05 * capacity, f"egress at {total / capacity:.1%} of its target"
    assert total - got["victim"] <= 1.05 * (capacity - min(victim, share)), "the flood took more than its FFS rate"


# every region of the code: below the admitted range (clamped up), its edges, inside, above it
CODES = [0x0001, 0x4000, 0x7BFF, 0x7C00, 0x7E00, 0x8000, 0x8200, 0x8400, 0x8401, 0xC000, 0xFFFF]


@pytest.mark.parametrize("code", CODES, ids=hex)
def test_forged_labels_buy_nothing(code):
    cap, victim, share, flood = 1000 * M, 400 * M, 500 * M, 3000 * M
    res = run_scenario(loads(topology(cap, victim, share, flood, decode(code))), "ffs")
    check(cap, victim, share, flood, {s["stream"]: s["measured"] for s in res.streams})


@pytest.mark.slow
@pytest.mark.parametrize("code", [0x0001, 0x7C00, 0x8000], ids=hex)
def test_forged_labels_at_100_gbps(code):
    """At 100 Gb/s a label of 2^-8 weighs 2^16 times the bytes: the estimator must be sized for
    it (spec §4), or F saturates and the flood escapes γ."""
    cap, victim, share, flood = 100e9, 40e9, 50e9, 300e9
    res = run_scenario(loads(topology(cap, victim, share, flood, decode(code), packet_size=9000)), "ffs",
                       duration_s=0.2)
    check(cap, victim, share, flood, {s["stream"]: s["measured"] for s in res.streams})


def test_many_streams_with_forged_labels():
    """50 streams, each with the smallest code: together still no more than the pair's share."""
    cap, victim, share, flood = 1000 * M, 400 * M, 500 * M, 3000 * M
    res = run_scenario(loads(topology(cap, victim, share, flood, decode(0x0001), streams=50)), "ffs")
    check(cap, victim, share, flood, {s["stream"]: s["measured"] for s in res.streams})
