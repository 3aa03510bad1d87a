# SPDX-License-Identifier: Apache-2.0
"""A port's frame limit and the frame its queue drains (spec §4, docs/software-switch.md "The
traffic manager"), in both engines.

A port of IP MTU m receives and sends frames of at most 14 + 4 + m + 4 bytes (Ethernet header, one
802.1Q tag, FCS): a Tofino MAC truncates and flags as an error any longer one. Its queue drains the
frame the egress emits: without a shim the port strips, and cut at the limit. Each expectation is
that arithmetic; the line-rate bytes a frame costs are its bytes with FCS plus 20.
"""

from __future__ import annotations

import pytest

from ffs.core import constants, p4names
from ffs.core.entries import Exact, TableEntry, Update
from ffs.core.frames import ipv4_frame, shim
from ffs.lab.attacks import loads
from ffs.lab.experiments import run_scenario
from ffs.switch import fast
from ffs.switch.pipeline import DROP_OVERSIZE, Pipeline
from ffs.switch.tm import TrafficManager
from switchkit import DST, IN, OUT, rig

ENGINES = [Pipeline] + ([fast.FastPipeline] if fast.available() else [])
SRC = "10.0.1.1"
GAP = 20  # preamble, start delimiter and inter-frame gap


def _rig(cls, mtu_in: int = 9000, mtu_out: int = 1500):
    r = rig(pipeline=cls)
    r.pipeline.tm.set_mtu(IN, mtu_in)
    r.pipeline.tm.set_mtu(OUT, mtu_out)
    r.pipeline.tm.configure(OUT, 1e9, 1 << 20)
    return r


@pytest.mark.parametrize("cls", ENGINES)
def test_a_jumbo_frame_through_a_1500_port_is_dropped_and_counted(cls):
    """A 9000-byte frame (9004 with FCS) leaves toward a port whose limit is 1522: dropped at its
    MAC, counted there; the queue drained the 1522 bytes the MAC sent before it cut the frame."""
    r = _rig(cls)
    res = r.send(ipv4_frame(SRC, DST, 9000 - 14))
    assert (res.egress_port, res.drop_reason) == (None, DROP_OVERSIZE)
    q = r.pipeline.tm.stats(OUT)
    assert (q.oversize, r.pipeline.tm.oversize_bytes[OUT]) == (1, 9004)
    assert q.backlog_bytes == 14 + 4 + 1500 + 4 + GAP
    assert r.pipeline.tm.oversize[IN] == 0  # its ingress port (MTU 9000) took it


@pytest.mark.parametrize("cls", ENGINES)
@pytest.mark.parametrize(
    ("ip_len", "vlan", "leaves"),
    [
        (1500, None, True),  # 1518 bytes with FCS
        (1500, 7, True),  # 1522: the limit holds one tag
        (1504, None, True),  # 1522: the MAC counts frame bytes, not the IP length
        (1505, None, False),  # 1523
        (1501, 7, False),  # 1523
    ],
)
def test_the_limit_is_the_mtu_with_a_tagged_header_and_fcs(cls, ip_len, vlan, leaves):
    r = _rig(cls)
    res = r.send(ipv4_frame(SRC, DST, ip_len, vlan=vlan))
    assert (res.egress_port == OUT) is leaves, res
    assert r.pipeline.tm.oversize[OUT] == (0 if leaves else 1)


@pytest.mark.parametrize("cls", ENGINES)
def test_a_frame_above_the_ingress_limit_never_reaches_the_parser(cls):
    """The receiving MAC drops it: counted on the ingress port, and nothing of the pipeline moved
    (no event, no offered load, no estimator input)."""
    r = _rig(cls, mtu_in=1500, mtu_out=9000)
    res = r.send(ipv4_frame(SRC, DST, 9000 - 14))
    assert (res.egress_port, res.drop_reason) == (None, DROP_OVERSIZE)
    assert (r.pipeline.tm.oversize[IN], r.pipeline.tm.oversize[OUT]) == (1, 0)
    p = r.pipeline
    assert not any(p.events.packets) and not any(p.rate_est.offered.packets) and not any(p.rate_est.pair_bytes.packets)
    assert r.send(ipv4_frame(SRC, DST, 1500)).egress_port == OUT


@pytest.mark.parametrize("cls", ENGINES)
def test_a_port_without_an_mtu_has_no_limit(cls):
    r = rig(pipeline=cls)
    assert r.send(ipv4_frame(SRC, DST, 9000)).egress_port == OUT
    assert not any(r.pipeline.tm.oversize)


@pytest.mark.parametrize("cls", ENGINES)
def test_the_queue_drains_the_frame_the_egress_emits(cls):
    """A port that strips the shim sends 8 bytes less than the frame the TM holds: its queue
    drains those, 1000 + 14 + 4 + 20 for an IP packet of 1000 bytes with its shim."""
    r = _rig(cls)
    r.driver.write(
        [Update("insert", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(OUT)}, "strip_shim", {}))]
    )
    res = r.send(ipv4_frame(SRC, DST, 1000, ffs=shim(rf=constants.CODE_ONE)))
    assert res.egress_port == OUT and len(res.frame) == 14 + 1000 - constants.SHIM_LEN
    assert r.pipeline.tm.backlog[OUT] == 14 + 1000 - constants.SHIM_LEN + 4 + GAP


def test_a_bad_mtu_is_refused_and_changes_nothing():
    tm = TrafficManager()
    tm.set_mtu(3, 1500)
    for port, mtu in ((3, 67), (3, 65536), (constants.NUM_PORTS, 1500)):
        with pytest.raises(ValueError, match="MTU|out of range"):
            tm.set_mtu(port, mtu)
    assert tm.frame_max[3] == 14 + 4 + 1500 + 4


def test_a_node_counts_what_its_ports_refused():
    """Virtual time, a node of default MTU (1500): a source of 9000-byte IP packets at 4 Mb/s for
    0.5 s, evenly spaced, sends 4e6 · 0.5 / (8 · (9000 + 14 + 4 + 20)) = 27.7 frames; each one is refused by the
    ingress port and counted there, none delivered, and the estimator it was not sized for never
    sees one (spec §4)."""
    topo = loads(
        """
name: jumbo
duration: 0.5
nodes:
  s1:
    interfaces:
      p1: {capacity: 100Mbps, port: 1}
      p3: {capacity: 100Mbps, port: 3}
    fairness:
      p3: {p1: 100Mbps}
    routes:
      - {prefix: 10.0.3.0/24, interface: p3}
streams:
  - {name: jumbo, path: [{node: s1, ingress: p1, egress: p3}], demand: 4Mbps, packet_size: 9000}
"""
    )
    res = run_scenario(topo, "ffs", duration_s=0.5, arrivals="constant")
    sent = 4e6 * 0.5 / (8 * (9000 + 14 + 4 + GAP))
    assert abs(res.oversize["s1.p1"] - sent) <= 1, res.oversize
    assert "s1.p3" not in res.oversize
    assert [s["measured"] for s in res.streams] == [0.0]
