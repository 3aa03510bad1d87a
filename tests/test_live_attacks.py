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
