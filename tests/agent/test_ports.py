# SPDX-License-Identifier: Apache-2.0
"""Front-panel ports from the topology (ffs.core.ports, ffs.agent.frontpanel): speed from the capacity,
FEC and autonegotiation defaults and overrides, the front-panel name checked against the device
port, and a reconciliation that writes only what differs (a right port is never touched, so it
never flaps), re-adds a port at the wrong speed and puts it back if the switch refuses the new one."""

from __future__ import annotations

import pytest

from agentkit import TWO_PIPES_NODE
from ffs.agent.core import Agent
from ffs.agent.frontpanel import FrontPanel
from ffs.core import ports
from ffs.core.ports import PortError, PortSpec, PortState
from ffs.core.topology import TopologyError, load
from ffs.driver.base import DriverError
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import Pipeline

TOPO = """name: fp
nodes:
  s1:
    interfaces:
      a: {{capacity: {cap_a}, port: 0, fp: 1/0{extra_a}}}
      b: {{capacity: 10Gbps, port: 4, fp: 2/0}}
      c: {{capacity: 10Gbps, port: 8}}
    fairness:
      c: {{a: 5Gbps, b: 5Gbps}}
    routes:
      - {{prefix: 10.0.3.0/24, interface: c}}
"""


def topo(tmp_path, cap_a="100Gbps", extra_a=""):
    p = tmp_path / "fp.yaml"
    p.write_text(TOPO.format(cap_a=cap_a, extra_a=extra_a))
    return load(p)


class PortsDriver(LocalDriver):
    """The software switch with a recording `$PORT` and `$PORT_STR_INFO` (connector/lane -> 4·(c-1)+l),
    refusing 100G off lane 0 as Tofino does."""

    has_ports = True

    def __init__(self) -> None:
        super().__init__(Pipeline(1))
        self.held: dict[int, PortState] = {}
        self.writes: list[tuple[str, list]] = []

    def port_of(self, fp: str) -> int:
        c, lane = (int(x) for x in fp.split("/"))
        return 4 * (c - 1) + lane

    def read_ports(self, dev_ports):
        return {d: self.held[d] for d in dev_ports if d in self.held}

    def write_ports(self, adds=(), deletes=(), enables=(), limits=()):
        for d in deletes:
            del self.held[d]
            self.writes.append(("delete", [d]))
        for s in adds:
            if s.speed == "BF_SPEED_100G" and s.dev_port % 4:
                raise DriverError(f"$PORT: add: INVALID_ARGUMENT port {s.dev_port}")
            self.held[s.dev_port] = PortState(s, up=s.enable)
            self.writes.append(("add", [s.dev_port]))
        for d in enables:
            self.held[d] = PortState(PortSpec(**{**self.held[d].spec.__dict__, "enable": True}), up=True)
            self.writes.append(("enable", [d]))
        for s in limits:
            self.held[s.dev_port] = PortState(
                PortSpec(**{**self.held[s.dev_port].spec.__dict__, "frame_limit": s.frame_limit}),
                self.held[s.dev_port].up,
            )
            self.writes.append(("limit", [s.dev_port]))


def test_speed_fec_and_autoneg_follow_the_capacity_unless_said():
    assert ports.spec(0, 100e9) == PortSpec(0, "BF_SPEED_100G", "BF_FEC_TYP_REED_SOLOMON", "PM_AN_DEFAULT")
    assert ports.spec(4, 25e9) == PortSpec(4, "BF_SPEED_25G", "BF_FEC_TYP_NONE", "PM_AN_DEFAULT")
    assert ports.spec(4, 25e9, "fc", "off") == PortSpec(4, "BF_SPEED_25G", "BF_FEC_TYP_FIRECODE", "PM_AN_FORCE_DISABLE")
    # the MAC's frame limit: the IP MTU with an Ethernet header, one 802.1Q tag and the FCS (spec §4)
    assert ports.spec(4, 25e9, mtu=1500).frame_limit == 14 + 4 + 1500 + 4 == 1522
    assert ports.spec(4, 25e9, mtu=9000).frame_limit == 9022 and ports.spec(4, 25e9, mtu=10218).frame_limit == 10240
    assert [ports.pipe_of(p) for p in (0, 63, 128, 191, 256, 448)] == [0, 0, 1, 1, 2, 3]
    with pytest.raises(PortError, match="capacity 20 Gbit/s is none of them"):
        ports.spec(0, 20e9)


@pytest.mark.parametrize(
    "cap, extra, why",
    [
        ("20Mbps", "", "a front-panel port runs at"),
        ("100Gbps", ", fec: xx", "fec must be one of none, fc, rs"),
        ("100Gbps", ", autoneg: maybe", "autoneg must be one of default, on, off"),
        ("100Gbps", ", mtu: 10219", "carries frames up to 10240 bytes: mtu 10219 needs 10241"),
    ],
)
def test_a_topology_with_a_bad_port_is_refused_in_one_line(tmp_path, cap, extra, why):
    with pytest.raises(TopologyError, match=why) as e:
        topo(tmp_path, cap, extra)
    assert "nodes.s1.interfaces.a" in str(e.value) and "\n" not in str(e.value)


def test_ports_are_added_once_and_a_right_port_is_never_touched(tmp_path):
    d = PortsDriver()
    t = topo(tmp_path)
    a = Agent(d, t, "s1", manage_ports=True)
    a.install()
    assert sorted(d.held) == [0, 4] and d.held[0].spec.speed == "BF_SPEED_100G" and d.held[4].spec.enable
    assert a.snapshot.ports == [] and {p.interface: (p.fp, p.dev_port, p.up) for p in a._port_status} == {
        "a": ("1/0", 0, True),
        "b": ("2/0", 4, True),
    }
    d.writes.clear()
    Agent(d, t, "s1", manage_ports=True).install()  # a restart: the ports are right
    assert d.writes == []
    # a port at another speed is re-added; a disabled one is enabled, not re-added
    d.held[0] = PortState(PortSpec(0, "BF_SPEED_40G", "BF_FEC_TYP_NONE", "PM_AN_DEFAULT"), True)
    d.held[4] = PortState(PortSpec(**{**d.held[4].spec.__dict__, "enable": False}), False)
    Agent(d, t, "s1", manage_ports=True).install()
    assert d.writes == [("delete", [0]), ("add", [0]), ("enable", [4])]
    assert d.held[0].spec.speed == "BF_SPEED_100G"
    # every port carries the topology's MTU (1500 when unsaid) and no longer frame; a port at the
    # SDE's default limit (10240) gets it in place, not re-added (no flap)
    assert {d: h.spec.frame_limit for d, h in d.held.items()} == {0: 1522, 4: 1522}
    d.held[4] = PortState(PortSpec(**{**d.held[4].spec.__dict__, "frame_limit": 10240}), True)
    d.writes.clear()
    Agent(d, t, "s1", manage_ports=True).install()
    assert d.writes == [("limit", [4])] and d.held[4].spec.frame_limit == 1522 and d.held[4].up


def test_a_refused_port_is_put_back_as_it_was(tmp_path):
    d = PortsDriver()
    t = topo(tmp_path)
    d.held[1] = PortState(PortSpec(1, "BF_SPEED_25G", "BF_FEC_TYP_NONE", "PM_AN_DEFAULT"), True)
    fp = FrontPanel(d, t.node("s1"))
    fp.specs = {"a": ("1/1", ports.spec(1, 100e9))}
    with pytest.raises(PortError, match="refused port 1/1 at BF_SPEED_100G.*back as it was, BF_SPEED_25G"):
        fp._readd("a", "1/1", d.held[1].spec, ports.spec(1, 100e9))
    assert d.held[1].spec.speed == "BF_SPEED_25G"


def test_a_front_panel_name_that_is_another_device_port_is_refused(tmp_path):
    d = PortsDriver()
    t = topo(tmp_path)
    d.port_of = lambda fp: 12  # the switch maps 1/0 elsewhere than the topology's port 0
    with pytest.raises(
        PortError, match="interface a: front-panel port 1/0 is device port 12 on this switch, the topology says port 0"
    ):
        Agent(d, t, "s1", manage_ports=True).install()


def test_the_software_switch_has_no_ports_to_manage(tmp_path):
    a = Agent(LocalDriver(Pipeline(1)), topo(tmp_path), "s1")  # manage_ports is the tofino target's
    a.install()
    assert a.front_panel is None
    with pytest.raises(DriverError):
        LocalDriver(Pipeline(1)).read_ports([0])


def test_a_node_across_two_pipes_knows_the_pipe_of_each_pair_and_egress(tmp_path):
    """Device ports 0-63 are pipe 0, 128-191 pipe 1 on a 2-pipe Tofino: a pair's state lives in
    the pipe of its ingress port, an egress's counters in the pipe of its egress port."""
    p = tmp_path / "two-pipes.yaml"
    p.write_text(TWO_PIPES_NODE)  # manage_ports is off: its front-panel names go unused
    a = Agent(LocalDriver(Pipeline(1)), load(p), "s1")
    a.install(now_s=0.0)
    snap = a.step(0.0)
    assert {(x.ingress, x.egress): x.pipe for x in snap.pairs} == {
        ("a", "a"): 0,
        ("b", "a"): 1,
        ("a", "b"): 0,
        ("b", "b"): 1,
    }
    assert {x.egress: x.pipe for x in snap.egresses} == {"a": 0, "b": 1}
