# SPDX-License-Identifier: Apache-2.0
"""The agent's bring-up self-test on real interfaces (root): `ffs-agent --selftest-iface` sends its
frames from a host's veth into the live software switch, which models a chip whose pkt_length
follows the ingress deparser (`ffs-switch run --pkt-length deparsed+fcs`). Without the self-test
the P4 default (the arrival length, tofino-model's) reads every frame p1 inserts a shim into as
SHIM_LEN bytes long, a lie, and drops it; with it the agent finds the deparsed length with its FCS
(a truthful frame's excess FCS_LEN + SHIM_LEN, spec §7.3), sets the frame check, `ffsctl selftest`
says so, and the frames pass."""

import json
import os
import sys
import time

import pytest

from agentkit import ffsctl
from ffs.core import constants, p4names
from ffs.core.frames import ipv4_frame
from ffs.lab.liverun import agent_ready, live_node
from ffs.switch.driver import ModelDriver

TOPO = """
name: liveself{run}
nodes:
  s1:
    interfaces:
      p1: {capacity: 20Mbps, port: 1, insert: true}
      p2: {capacity: 20Mbps, port: 2}
      p3: {capacity: 20Mbps, port: 3}
    fairness:
      p3: {p1: 10Mbps, p2: 10Mbps}
    routes:
      - {prefix: 10.0.1.0/24, interface: p1}
      - {prefix: 10.0.2.0/24, interface: p2}
      - {prefix: 10.0.3.0/24, interface: p3}
hosts:
  h1: {attach: s1.p1, address: 10.0.1.1/24}
  h2: {attach: s1.p2, address: 10.0.2.1/24}
  h3: {attach: s1.p3, address: 10.0.3.1/24}
"""
SEND = r"""
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
for _ in range(int(sys.argv[2])):
    s.send(bytes.fromhex(sys.argv[1]))
"""


def accepted_at(drv: ModelDriver, port: int) -> tuple[int, int]:
    acc = drv.read_counters(p4names.ACCEPTED.name, [port])[port].packets
    bad = drv.read_counters(p4names.MALFORMED.name, [port])[port].packets
    return acc, bad


def send_plain(n, drv: ModelDriver, count: int) -> tuple[int, int]:
    """`count` plain frames from h1 toward h3 (p1 inserts a shim): (accepted, malformed) at p3."""
    import subprocess

    before = accepted_at(drv, 3)
    frame = ipv4_frame("10.0.1.1", "10.0.3.1", 1000)
    subprocess.run(n.exec_args("h1", sys.executable, "-c", SEND, frame.hex(), str(count)), check=True, timeout=10)
    end = time.monotonic() + 5
    while time.monotonic() < end:
        now = accepted_at(drv, 3)
        got = (now[0] - before[0], now[1] - before[1])
        if sum(got) >= count:
            return got
        time.sleep(0.05)
    return got


@pytest.fixture
def node(tmp_path):
    f = tmp_path / "liveself.yaml"
    f.write_text(TOPO.replace("{run}", str(os.getpid() % 100000)))
    with live_node(f, tmp_path, agent=False, switch_args=["--pkt-length", "deparsed+fcs"]) as n:
        n.file = f
        drv = ModelDriver(n.switch_address)
        drv.connect(timeout_s=10)
        n.drv = drv
        yield n


def start_agent(n, *extra: str):
    """The agent in h1's namespace, where eth0 is wired to p1 (the switch's control socket and the
    agent's are files: any namespace reaches them)."""
    ag = n.spawn(
        n.exec_args(
            "h1",
            sys.executable,
            "-m",
            "ffs.cli.agent",
            f"--topology={n.file}",
            "--node=s1",
            f"--switch={n.switch_address}",
            f"--socket={n.agent_socket}",
            f"--state-dir={n.work}/state{len(n.procs)}",  # each start its own: no quarantine carried over
            *extra,
        ),
        log="agent.log",
    )
    end = time.monotonic() + 30
    while time.monotonic() < end and ag.poll() is None and not agent_ready(n.agent_socket):
        time.sleep(0.1)
    return ag


def test_the_agent_measures_the_deparsed_length_and_the_frames_pass(node):
    n = node
    ag = start_agent(n)
    assert agent_ready(n.agent_socket), (n.work / "agent.log").read_text()[-800:]
    assert send_plain(n, n.drv, 20) == (0, 20), "without the self-test every inserted frame reads as a lie"
    r = ffsctl(n.agent_socket, "selftest")
    assert r.returncode == 0 and "no self-test ran" in r.stdout
    ag.terminate()
    ag.wait(timeout=10)

    ag = start_agent(n, "--selftest-iface=eth0", "--selftest-port=p1")
    assert agent_ready(n.agent_socket), (n.work / "agent.log").read_text()[-800:]
    r = ffsctl(n.agent_socket, "--json", "selftest")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["measured"] and got["basis"] == {"fcs_counted": True, "deparsed": True}
    assert got["excess"] == constants.FCS_LEN + constants.SHIM_LEN
    assert (got["ingress"], got["egress"]) == ("p1", "p3")  # p2 is no managed egress: no shim toward it
    text = ffsctl(n.agent_socket, "selftest").stdout
    assert "counts the FCS and is the length the ingress deparser emitted" in text
    assert send_plain(n, n.drv, 20) == (20, 0), "configured for the deparsed length, truthful frames pass"
    ag.terminate()
    assert ag.wait(timeout=10) == 0


def test_a_selftest_that_cannot_send_refuses_to_start(node):
    n = node
    ag = start_agent(n, "--selftest-iface=nosuch0", "--selftest-port=p1")
    assert ag.wait(timeout=30) != 0
    log = (n.work / "agent.log").read_text()
    assert "cannot send on nosuch0" in log, log[-800:]
