# SPDX-License-Identifier: Apache-2.0
"""ffs-agent on Tofino 2: bf_switchd and the Tofino-2 tofino-model with the ffs of this checkout
(make build CHIP=tofino2). The agent takes its ports from the topology's front-panel names through
`$PORT_STR_INFO` (on the Tofino-2 model 1/0 is device port 8, 9/0 is 136, 17/0 is 264, 25/0 is
392: one port on each of the four pipes), adds and enables them, installs the node, and frames
cross from every pipe to every other pipe, each counted once in its pair's counter (the driver
sums the pipes' cells). Skipped, with the reason, without an SDE, root or the installed program."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT
from ffs.core import p4names
from ffs.core.frames import ipv4_frame
from ffs.core.program import pairs_of
from ffs.core.topology import load
from ffs.lab.differential import Wire, port_map_veths
from sdekit import running_sde, sde_missing

from .test_switchd import driver, start_agent, status

PORT_MAP = ROOT / "ptf-tests" / "port_maps" / "tofino2-model.json"
# interface -> (front-panel name, device port on the Tofino-2 model, pipe)
PORTS = {"p1": ("1/0", 8, 0), "p2": ("9/0", 136, 1), "p3": ("17/0", 264, 2), "p4": ("25/0", 392, 3)}
FRAMES = 3  # per pair


def why_skip() -> str | None:
    want = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "p4src-sha256"], capture_output=True, text=True
    ).stdout.strip()
    return sde_missing("ffs", "tofino2", want)


WHY = why_skip()
pytestmark = pytest.mark.skipif(WHY is not None, reason=str(WHY))


def topology_text() -> str:
    lines = ["name: pipes-tofino2", "nodes:", "  s1:", "    interfaces:"]
    lines += [
        f"      {n}: {{capacity: 25Gbps, port: {dev}, fp: {fp}, insert: true, strip: true}}"
        for n, (fp, dev, _) in PORTS.items()
    ]
    lines += ["    fairness:"]
    for e in PORTS:
        lines.append(f"      {e}: {{" + ", ".join(f"{i}: 5Gbps" for i in PORTS if i != e) + "}")
    lines += ["    routes:"] + [f"      - {{prefix: 10.0.{k}.0/24, interface: {n}}}" for k, n in enumerate(PORTS, 1)]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def sde(tmp_path_factory):
    veths = port_map_veths(PORT_MAP)
    n = 1 + max(int(v.removeprefix("veth")) for v in veths.values())
    subprocess.run(
        [str(Path(os.environ["SDE_INSTALL"], "bin", "veth_setup.sh")), str(n + n % 2)], check=True, capture_output=True
    )
    yield from running_sde("ffs", tmp_path_factory, "switchd-tofino2-logs", "tofino2", PORT_MAP)


def test_agent_on_tofino2_ports_from_front_panel_names_on_every_pipe(sde, tmp_path):
    topo = tmp_path / "pipes-tofino2.yaml"
    topo.write_text(topology_text())
    node = load(topo).node("s1")
    d = driver()
    try:
        assert {n: d.port_of(fp) for n, (fp, _, _) in PORTS.items()} == {n: dev for n, (_, dev, _) in PORTS.items()}
    finally:
        d.close()
    agent = start_agent(tmp_path, topology=topo)
    try:
        shown = {p["interface"]: p for p in status(tmp_path)["ports"]}
    finally:  # the node stays installed; the agent's client id is free for the reads below
        agent.terminate()
        assert agent.wait(timeout=30) == 0, (tmp_path / "agent.log").read_text()[-1500:]
    assert {k: (v["fp"], v["dev_port"], v["pipe"], v["speed"], v["enabled"]) for k, v in shown.items()} == {
        n: (fp, dev, pipe, "BF_SPEED_25G", True) for n, (fp, dev, pipe) in PORTS.items()
    }
    pairs = [p for p in pairs_of(node) if p.ingress != p.egress]  # a port back to itself is no route
    assert len(pairs) == 12
    d = driver()
    try:
        before = d.read_counters(p4names.PAIR_BYTES.name, [p.pid for p in pairs])
        veths = port_map_veths(PORT_MAP)
        wire = Wire({dev: veths[dev] for _, dev, _ in PORTS.values()})
        sent: dict[int, tuple[int, int]] = {}  # tag -> (ingress, egress device port)
        try:
            k = {n: i for i, n in enumerate(PORTS, 1)}
            for p in pairs:
                for _ in range(FRAMES):
                    seq = len(sent)
                    f = ipv4_frame(f"10.0.{k[p.ingress]}.1", f"10.0.{k[p.egress]}.7", 200)
                    f = f[:6] + b"\x02\xff" + seq.to_bytes(4, "big") + f[12:]  # the differential's probe tag
                    sent[seq] = (p.ingress_port, p.egress_port)
                    wire.send(p.ingress_port, f)
                    time.sleep(0.01)
            end = time.monotonic() + 60
            while time.monotonic() < end and len(wire.got) < len(sent):
                time.sleep(0.5)
            time.sleep(1.0)
            got = {seq: [port for port, _ in outs] for seq, outs in wire.got.items()}
        finally:
            wire.close()
        wrong = {seq: (i, e, got.get(seq)) for seq, (i, e) in sent.items() if got.get(seq) != [e]}
        assert not wrong, f"frames not delivered once on their egress (tag: ingress, egress, seen on): {wrong}"
        after = d.read_counters(p4names.PAIR_BYTES.name, [p.pid for p in pairs])
        counted = {p.pid: after[p.pid].packets - before[p.pid].packets for p in pairs}
        assert counted == {p.pid: FRAMES for p in pairs}
        # the TM's port counters the agent follows a slow port by (spec §9) answer for a port of
        # every pipe, and stand still while nothing flows: the agent acts on their differences.
        # (tofino-model fills them with its 0x...bad pattern once the ports are up, not with 0.)
        devs = sorted(dev for _, dev, _ in PORTS.values())
        tm = d.read_tm_ports(devs)
        assert sorted(tm) == devs and d.read_tm_ports(devs) == tm, tm
    finally:
        d.close()
