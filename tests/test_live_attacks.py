"""A forged label, live (root): the dumbbell on the software switch over veth with the agent, the
flooding host's port *trusting* labels (the worst case; host ports reset them by default), the
flood at its port's line rate with a label far below the admitted range. Corollary 1: the
well-behaved sender keeps its 8 Mb/s (≥ 95 %), and the flood gets no more than its FFS rate
(docs/security.md; the same attack in virtual time at line rate: tests/test_attacks.py)."""

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import TOPOLOGIES, requires_root
from ffs import p4names as N
from ffs.driver.model import ModelDriver
from ffs.liverun import live_node

pytestmark = [requires_root]


@pytest.mark.parametrize("label", ["0x0001", "0x4000"])
def test_a_forged_label_from_a_trusted_port_buys_nothing_live(tmp_path, label):
    name = f"liveatk{os.getpid() % 100000}"
    text = (TOPOLOGIES / "dumbbell.yaml").read_text().replace("name: dumbbell", f"name: {name}")
    text = text.replace("p2: {capacity: 20Mbps, port: 2, insert: true, strip: true}",
                        "p2: {capacity: 20Mbps, port: 2, insert: true, strip: true, trust: true}")
    assert "trust: true" in text
    topo_file = tmp_path / f"{name}.yaml"
    topo_file.write_text(text)
    with live_node(topo_file, tmp_path) as live:
        rx = live.spawn(live.exec_args("h3", sys.executable, "-m", "ffs.traffic", "recv", "--duration=7"),
                        stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)
        live.spawn(live.exec_args("h1", sys.executable, "-m", "ffs.traffic", "send", "--dst=10.0.3.1", "--rate=8Mbps",
                                  "--duration=6.5"), stdout=subprocess.DEVNULL)
        live.spawn(live.exec_args("h2", sys.executable, "-m", "ffs.traffic", "send", "--dst=10.0.3.1", "--rate=20Mbps",
                                  f"--label={label}", "--duration=6.5"), stdout=subprocess.DEVNULL)
        lines = [json.loads(x) for x in rx.stdout]
        rx.wait()
    steady = [x["rates_bps"] for x in lines if 2 <= x["t"] <= 6]
    well = sum(r.get("10.0.1.1", 0) for r in steady) / len(steady)
    flood = sum(r.get("10.0.2.1", 0) for r in steady) / len(steady)
    assert well >= 0.95 * 8e6, (well, lines)
    # the egress's target is 20 Mb/s: the flood's FFS rate is what h1 leaves, 12 Mb/s
    assert flood <= 1.05 * 12e6, (flood, lines)


@pytest.mark.parametrize("ip_len", [20, 0xFFFF])
def test_a_lying_length_delivers_nothing_live(tmp_path, ip_len):
    """h2 floods 1250-byte frames whose IPv4 total length says `ip_len` (a packet socket, so the
    kernel leaves the field alone) at its port's 20 Mb/s line rate. The switch weighs the claimed
    frame (spec §4) and its egress drops every frame whose bytes disagree (spec §7.3), counting it
    in `malformed` and `pair_malformed`; the agent quarantines the pair: h1 keeps its 8 Mb/s, the
    flood delivers nothing."""
    name = f"livelen{os.getpid() % 100000}"
    text = (TOPOLOGIES / "dumbbell.yaml").read_text().replace("name: dumbbell", f"name: {name}")
    topo_file = tmp_path / f"{name}.yaml"
    topo_file.write_text(text)
    with live_node(topo_file, tmp_path) as live:
        rx = live.spawn(live.exec_args("h3", sys.executable, "-m", "ffs.traffic", "recv", "--duration=7"),
                        stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)
        live.spawn(live.exec_args("h1", sys.executable, "-m", "ffs.traffic", "send", "--dst=10.0.3.1", "--rate=8Mbps",
                                  "--duration=6.5"), stdout=subprocess.DEVNULL)
        liar = live.spawn(live.exec_args("h2", sys.executable, "-m", "ffs.traffic", "send", "--dst=10.0.3.1",
                                         "--rate=20Mbps", f"--ip-len={ip_len}", "--duration=6.5"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = [json.loads(x) for x in rx.stdout]
        rx.wait()
        out, err = liar.communicate(timeout=10)
        assert liar.returncode == 0, err
        sent = json.loads(out)["sent_packets"]
        drv = ModelDriver(live.switch_address)
        drv.connect(5)
        port3 = live.topology.node("s1").interfaces["p3"].port
        malformed = drv.read_counters(N.MALFORMED.name, [port3])[port3].packets
        by_pair = {i: v.packets for i, v in drv.read_counters(N.PAIR_MALFORMED.name).items() if v.packets}
        drv.close()
    steady = [x["rates_bps"] for x in lines if 2 <= x["t"] <= 6]
    well = sum(r.get("10.0.1.1", 0) for r in steady) / len(steady)
    flood = sum(r.get("10.0.2.1", 0) for r in steady) / len(steady)
    assert well >= 0.95 * 8e6, (well, lines)
    assert flood == 0, (flood, lines)
    assert sent >= 0.9 * 20e6 * 6.5 / (8 * 1250), sent  # the flood was offered at line rate
    # lying frames reach the frame check and are counted there, all on the flood's pair, until the
    # agent quarantines that pair (one 100 ms period); then γ admits them only into what h1 leaves
    # of the 20 Mb/s target, because A_j counts them: at most that leftover plus two periods' worth
    assert len(by_pair) == 1 and sum(by_pair.values()) == malformed, (by_pair, malformed)
    leftover = 1.05 * (20e6 - well) * 6.5 / (8 * 1264)
    assert 0 < malformed <= min(sent, leftover + 2 * 0.1 / 6.5 * sent), (malformed, sent, leftover)
