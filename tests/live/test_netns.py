# SPDX-License-Identifier: Apache-2.0
"""ffs.lab.netns: names and checks of the plan (no root needed), and as root the real namespaces:
created with offloads off, MTUs, routes and neighbours, removed completely, both repeatable."""

import os
import subprocess

import pytest

from conftest import TOPOLOGIES
from ffs.core.topology import load
from ffs.lab import netns

TOPO = """
name: {name}
nodes:
  s1:
    interfaces:
      p1: {{capacity: 10Mbps, port: 1}}
      p2: {{capacity: 10Mbps, port: 2}}
      p3: {{capacity: 10Mbps, port: 3}}
    fairness:
      p3: {{p1: 5Mbps, p2: 5Mbps}}
    routes:
      - {{prefix: 10.0.1.0/24, interface: p1}}
      - {{prefix: 10.0.3.0/24, interface: p3}}
hosts:
{hosts}
"""
HOSTS = """  a: {attach: s1.p1, address: 10.0.1.1/24}
  b: {attach: s1.p3, address: 10.0.3.1/24}
"""


RUN = f"ns{os.getpid() % 100000}"  # own namespaces: concurrent test runs must not collide


def topo_file(tmp_path, name=RUN, hosts=HOSTS):
    f = tmp_path / f"{name}.yaml"
    f.write_text(TOPO.format(name=name, hosts=hosts))
    return load(f)


def test_plan_names_are_prefixed_and_fit_linux_limits():
    p = netns.plan(load(TOPOLOGIES / "dumbbell.yaml"))
    assert p.switch_ns == "ffs-dumbbell-sw" and p.node == "s1"
    assert [h.netns for h in p.hosts] == ["ffs-dumbbell-h1", "ffs-dumbbell-h2", "ffs-dumbbell-h3"]
    assert p.ports() == {1: "p1", 2: "p2", 3: "p3"}
    assert len({h.mac for h in p.hosts}) == 3
    temps = [n for h in p.hosts for n in h.temp_names()]
    assert len(set(temps)) == 6 and all(n.startswith("ffs") and len(n) <= netns.IFNAMSIZ for n in temps)
    assert p.host("h3").ip == "10.0.3.1"
    with pytest.raises(netns.NetnsError, match="no host 'h9'"):
        p.host("h9")


def test_plan_refuses_what_it_cannot_build(tmp_path):
    with pytest.raises(netns.NetnsError, match="one host per switch interface"):
        netns.plan(topo_file(tmp_path, hosts=HOSTS + "  c: {attach: s1.p1, address: 10.0.1.2/24}\n"))
    with pytest.raises(netns.NetnsError, match=f"namespace name ffs-{RUN}-sw is taken by the switch"):
        netns.plan(topo_file(tmp_path, hosts="  sw: {attach: s1.p1, address: 10.0.1.1/24}\n"))
    with pytest.raises(netns.NetnsError, match="namespace name .* taken by host"):
        netns.plan(
            topo_file(
                tmp_path,
                hosts="  h_1: {attach: s1.p1, address: 10.0.1.1/24}\n  h1: {attach: s1.p3, address: 10.0.3.1/24}\n",
            )
        )
    with pytest.raises(netns.NetnsError, match="no hosts"):
        netns.plan(load(TOPOLOGIES / "table2.yaml"))


def test_not_root_is_one_clear_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    calls = []
    monkeypatch.setattr(netns.subprocess, "run", lambda *a, **k: calls.append(a))
    assert netns.main(["up", str(TOPOLOGIES / "dumbbell.yaml")]) == 2
    assert capsys.readouterr().err == "ffs.lab.netns: error: network namespaces need root: run as root (or with sudo)\n"
    assert calls == []  # nothing was attempted
    assert netns.main(["down", str(TOPOLOGIES / "dumbbell.yaml")]) == 2
    assert netns.main(["sideways", "x"]) == 2
    assert "usage" in capsys.readouterr().err
    assert netns.main(["up", str(tmp_path / "missing.yaml")]) == 2
    assert capsys.readouterr().err.startswith("ffs.lab.netns: error: ")


def _sh(*args: str) -> str:
    return subprocess.run(list(args), capture_output=True, text=True, check=True).stdout


@pytest.mark.root
def test_up_and_down_for_real_and_repeatable(tmp_path):
    topo = topo_file(tmp_path)
    try:
        p = netns.up(topo)
        p = netns.up(topo)  # again: replaces, does not fail or duplicate
        assert sorted(netns.existing(topo)) == sorted([f"ffs-{RUN}-sw", f"ffs-{RUN}-a", f"ffs-{RUN}-b"])
        a = p.host("a")
        link = _sh("ip", "-n", a.netns, "-o", "link", "show", "eth0")
        assert "mtu 1492" in link and a.mac in link and "LOWER_UP" in link
        assert "mtu 1500" in _sh("ip", "-n", p.switch_ns, "-o", "link", "show", "p1")
        for ns, dev in ((a.netns, "eth0"), (p.switch_ns, "p3")):
            k = _sh("ip", "netns", "exec", ns, "ethtool", "-k", dev)
            for feature in (
                "tx-checksumming",
                "rx-checksumming",
                "generic-receive-offload",
                "generic-segmentation-offload",
                "tcp-segmentation-offload",
            ):
                assert f"{feature}: off" in k, (dev, feature)
        assert "10.0.3.0/24 dev eth0" in _sh("ip", "-n", a.netns, "route")
        assert "10.0.3.1 dev eth0 lladdr 02:ff:00:00:00:02 PERMANENT" in _sh("ip", "-n", a.netns, "neigh")
        assert "10.0.1.1/24" in _sh("ip", "-n", a.netns, "-o", "addr", "show", "eth0")
        # a namespace with a process in it is a run still going: up refuses to replace it
        busy = subprocess.Popen(["ip", "netns", "exec", p.switch_ns, "sleep", "30"])
        try:
            with pytest.raises(netns.NetnsError, match=f"namespace {p.switch_ns} is in use"):
                netns.up(topo)
            assert sorted(netns.existing(topo)) == sorted([f"ffs-{RUN}-sw", f"ffs-{RUN}-a", f"ffs-{RUN}-b"])
        finally:
            busy.terminate()
            busy.wait()
    finally:
        assert sorted(netns.down(topo)) == sorted([f"ffs-{RUN}-sw", f"ffs-{RUN}-a", f"ffs-{RUN}-b"])
    assert netns.existing(topo) == []
    assert netns.down(topo) == []  # idempotent, and says there was nothing to remove


@pytest.mark.root
def test_down_with_nothing_up_says_so(tmp_path, capsys):
    topo = topo_file(tmp_path)
    assert netns.existing(topo) == []
    assert netns.main(["down", str(tmp_path / f"{RUN}.yaml")]) == 0
    out = capsys.readouterr().out
    assert "nothing to remove" in out and "removed the namespaces" not in out, out
    leftovers = _sh("ip", "-o", "link", "show")
    assert not any(n in leftovers for h in netns.plan(topo).hosts for n in h.temp_names())
