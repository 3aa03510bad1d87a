# SPDX-License-Identifier: Apache-2.0
"""Live mode on real interfaces (root): the software switch between veth pairs in private network
namespaces, with the agent, isolates a well-behaved UDP sender from a flood; and the FFS shim it
inserts is really on the wire when the egress does not strip it."""

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import TOPOLOGIES
from ffs.core import p4names
from ffs.core.allocator import allocate
from ffs.core.entries import Exact, TableEntry, Update
from ffs.lab.liverun import live_node
from ffs.switch.driver import ModelDriver

CAPTURE = r"""
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind(("eth0", 0)); s.settimeout(5)
while True:
    f, a = s.recvfrom(65535)
    if a[2] != 4 and len(f) > 42 and f[12:14] == b"\x08\x00" and f[23] == 253:
        print(f.hex()); break
"""


@pytest.fixture
def live(tmp_path):
    name = f"livetest{os.getpid() % 100000}"  # own namespaces: concurrent test runs must not collide
    text = (TOPOLOGIES / "dumbbell.yaml").read_text().replace("name: dumbbell", f"name: {name}")
    topo_file = tmp_path / f"{name}.yaml"
    topo_file.write_text(text)
    with live_node(topo_file, tmp_path) as node:
        yield node
        switch = node.procs[0]
    assert switch.returncode in (0, -15)  # the switch stopped cleanly on SIGTERM


def test_live_isolation_and_shim_on_the_wire(live):
    topo, plan = live.topology, live.plan
    rx = live.receive("h3", 5)
    time.sleep(0.3)
    for host, rate in (("h1", "8Mbps"), ("h2", "60Mbps")):
        live.send(host, "10.0.3.1", rate, 4.5)
    lines = [json.loads(x) for x in rx.stdout]
    rx.wait()
    steady = [x["rates_bps"] for x in lines if 2 <= x["t"] <= 4]
    exact = {s.name: s.rate for s in allocate(topo).streams}
    well = sum(r.get("10.0.1.1", 0) for r in steady) / len(steady)
    flood = sum(r.get("10.0.2.1", 0) for r in steady) / len(steady)
    assert well >= 0.9 * exact["well-behaved"], (well, lines)  # isolated: it keeps its 8 Mbps
    assert flood == pytest.approx(exact["flood"], rel=0.25), (flood, lines)  # cut from 60 to about 12

    # now stop stripping at p3: the shim the switch inserted reaches h3 as IP protocol 253
    drv = ModelDriver(live.switch_address)
    drv.connect(timeout_s=5)
    drv.write([Update("delete", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(3)}))])
    cap = subprocess.Popen(
        ["ip", "netns", "exec", plan.host("h3").netns, sys.executable, "-c", CAPTURE], stdout=subprocess.PIPE, text=True
    )
    time.sleep(0.5)
    subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            plan.host("h1").netns,
            sys.executable,
            "-m",
            "ffs.lab.traffic",
            "send",
            "--dst=10.0.3.1",
            "--rate=1Mbps",
            "--duration=0.5",
        ],
        check=True,
        capture_output=True,
    )
    out, _ = cap.communicate(timeout=10)
    frame = bytes.fromhex(out.strip())
    shim = frame[34:42]
    assert shim[0] >> 4 == 1 and shim[0] & 0x2  # version 1, labels defaulted by this node
    assert shim[1] == 17  # next header: UDP
    assert (frame[16] << 8 | frame[17]) == 1250 + 8  # IP length grew by the shim
