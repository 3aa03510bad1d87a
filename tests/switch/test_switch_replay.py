# SPDX-License-Identifier: Apache-2.0
"""Table II packet by packet: three streams through the software switch in virtual time at 15 Gb/s,
with the agent's tau loop (ffs.core.tau inside ffs.agent) every period, settle at the exact FFS
allocation (Eq. 2: tau = 4/3; 3, 4/3, 32/3 Gb/s). Also: `replay` of arbitrary frames with
`on_period(now_ns, driver)`, pcap input, and the `ffs-switch replay` command."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from conftest import ROOT
from ffs.agent.core import Agent
from ffs.core import constants
from ffs.core.allocator import allocate
from ffs.core.frames import ipv4_frame, shim
from ffs.core.labels import encode
from ffs.core.topology import load
from ffs.lab.cli.switch import main as switch_cli
from ffs.switch import fast, trace
from ffs.switch.driver import LocalDriver

EXACT = {"s1": 3e9, "s2": 4e9 / 3, "s3": 32e9 / 3}


def test_table_ii_replay_converges_to_exact_allocation(topo_dir):
    fast.require()
    topo = load(topo_dir / "table2.yaml")
    exact = allocate(topo)
    assert {s.name: s.rate for s in exact.streams} == pytest.approx(EXACT)
    assert exact.tau("n", "j") == pytest.approx(4 / 3)
    p = fast.FastPipeline(seed=7)
    agent = Agent(LocalDriver(p), topo, "n")
    agent.install()
    taus = []

    def on_period(now_ns):
        snap = agent.step(now_ns / 1e9)
        taus.append(snap.egresses[0].tau)

    res = trace.run(topo, {"n": p}, 0.5, period_s=0.005, on_period=on_period, seed=7)
    assert res.packets > 0.45 * 23e9 / (1250 * 8)  # 23 Gb/s offered for half a second
    for s in exact.streams:
        assert res.rate_bps(s.name, 0.25, 0.5) == pytest.approx(s.rate, rel=0.05), s.name
    settled = taus[-50:]
    assert sum(settled) / len(settled) == pytest.approx(4 / 3, rel=0.05)
    assert min(settled) >= 1.0  # Lemma 1


def _table2_arrivals(duration_s: float, seed: int):
    dst = "10.0.3.1"
    labels = {"s1": (1, 3 / 6, 3e9), "s2": (1, 4 / 1, 4e9), "s3": (2, 16 / 8, 16e9)}  # port, r/f, demand
    return trace.merge(
        *(
            trace.stream_arrivals(
                port,
                ipv4_frame(f"10.0.{k}.1", dst, 1250, shim(encode(rf), constants.FLAG_RI)),
                rate * 1264 / 1250,
                0.0,
                duration_s,
                stream=name,
                seed=seed + k,
            )
            for k, (name, (port, rf, rate)) in enumerate(labels.items())
        )
    )


def test_replay_with_driver_callback_settles(topo_dir):
    """`replay` + on_period(now_ns, driver): the same node fed from generated frames."""
    fast.require()
    topo = load(topo_dir / "table2.yaml")
    p = fast.FastPipeline(seed=3)
    agent = Agent(LocalDriver(p), topo, "n")
    agent.install()
    seen_drivers = set()

    def on_period(now_ns, driver):
        seen_drivers.add(id(driver))
        return agent.step(now_ns / 1e9).egresses[0].tau

    res = trace.replay(p, _table2_arrivals(0.3, 3), 0.3, period_s=0.005, on_period=on_period)
    assert len(seen_drivers) == 1 and len(res.periods) == 60
    for name, rate in EXACT.items():
        # accepted counts frame bytes (1264 per 1250 B of IP): scale back to the IP rates of Table II
        assert res.rate_bps(name, 0.15, 0.3) * 1250 / 1264 == pytest.approx(rate, rel=0.05), name
    assert sum(r["value"] for r in res.periods[-20:]) / 20 == pytest.approx(4 / 3, rel=0.05)
    assert set(res.egress) == {3}


def wire(frame: bytes) -> int:
    """The bytes a captured frame (no FCS) takes on an Ethernet wire (IEEE 802.3): FCS 4, padded to
    64, preamble and start delimiter 8, inter-frame gap 12."""
    return max(len(frame) + 4, 64) + 8 + 12


def test_pcap_replay_is_the_same_as_the_arrivals(tmp_path, topo_dir):
    arrivals = list(_table2_arrivals(0.004, 5))
    trace.write_pcap(tmp_path / "t.pcap", ((a.t_s, a.frame) for a in arrivals), epoch_s=1_700_000_000)
    back = list(trace.pcap_arrivals(tmp_path / "t.pcap", 1))
    assert [a.frame for a in back] == [a.frame for a in arrivals]
    assert (
        max(abs((b.t_s - back[0].t_s) - (a.t_s - arrivals[0].t_s)) for a, b in zip(arrivals, back, strict=False)) < 1e-9
    )
    assert {b.stream for b in back} == {"10.0.0.1", "10.0.1.1", "10.0.2.1"}
    # re-timed at a line rate: back to back, each frame as the previous one's serialization ends
    paced = list(trace.pcap_arrivals(tmp_path / "t.pcap", 1, line_rate_bps=10e9))
    assert [a.frame for a in paced] == [a.frame for a in arrivals]
    assert max(abs(b.t_s - a.t_s - wire(a.frame) * 8 / 10e9) for a, b in zip(paced, paced[1:], strict=False)) < 1e-15
    with pytest.raises(trace.PcapError, match="not a pcap"):
        list(trace.read_pcap(_write(tmp_path / "bad", b"x" * 40)))


def _write(path, data):
    path.write_bytes(data)
    return path


def test_cli_replay_topology_and_pcap(tmp_path, topo_dir):
    runner = CliRunner()
    r = runner.invoke(switch_cli, ["replay", str(topo_dir / "table2.yaml"), "--duration", "0.1", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["engine"] in ("c", "python") and out["packets"] > 100_000
    assert {s["stream"] for s in out["streams"]} == {"s1", "s2", "s3"}
    trace.write_pcap(tmp_path / "t.pcap", ((a.t_s, a.frame) for a in _table2_arrivals(0.02, 1)))
    r = runner.invoke(
        switch_cli,
        ["replay", str(topo_dir / "table2.yaml"), "--pcap", str(tmp_path / "t.pcap"), "--ingress", "n.i1", "--json"],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["packets"] > 1000 and {s["stream"] for s in out["streams"]} == {"10.0.0.1", "10.0.1.1", "10.0.2.1"}
    r = runner.invoke(
        switch_cli, ["replay", str(topo_dir / "table2.yaml"), "--pcap", str(tmp_path / "t.pcap"), "--ingress", "n.nope"]
    )
    assert r.exit_code == 2 and "n.nope" in r.output and "Traceback" not in r.output


SAMPLE = ROOT / "samples" / "table2.pcap"


def test_the_sample_pcap_is_what_its_script_writes(tmp_path):
    """samples/table2.pcap (the docs' replay example) is tracked; its script rewrites it byte for byte."""
    subprocess.run(
        [sys.executable, str(SAMPLE.parent / "make_pcap.py"), str(tmp_path / "t.pcap")], check=True, capture_output=True
    )
    assert (tmp_path / "t.pcap").read_bytes() == SAMPLE.read_bytes()
    frames = list(trace.read_pcap(SAMPLE))
    assert len(frames) == 48 and {trace.source_of(f) for _, f in frames} == {"10.0.0.1", "10.0.1.1", "10.0.2.1"}


def test_line_rate_replays_the_sample_back_to_back():
    """--line-rate re-times the capture: its frames, 1 ms apart when captured, enter back to back at
    the rate (the last one ends at total bits on the wire / rate), where the capture's own times
    span 47 ms."""
    rate = 1e9
    captured = list(trace.pcap_arrivals(SAMPLE, 1))
    paced = list(trace.pcap_arrivals(SAMPLE, 1, line_rate_bps=rate))
    assert captured[-1].t_s == pytest.approx(0.047)
    bits = [wire(a.frame) * 8 for a in paced]
    assert [a.t_s for a in paced] == pytest.approx([sum(bits[:k]) / rate for k in range(len(bits))], abs=1e-15)
    r = CliRunner().invoke(
        switch_cli,
        [
            "replay",
            str(SAMPLE.parent.parent / "topologies" / "table2.yaml"),
            "--pcap",
            str(SAMPLE),
            "--ingress",
            "n.i1",
            "--line-rate",
            "1Gbps",
            "--no-agent",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["packets"] == 48
    # the replay lasts the serialization of the 48 frames plus one period: all of it offered in that time
    assert sum(s["offered"] for s in out["streams"]) * out["duration_s"] == pytest.approx(sum(bits))
    assert out["duration_s"] < 0.006  # not the capture's 47 ms
    r = CliRunner().invoke(
        switch_cli,
        [
            "replay",
            str(SAMPLE.parent.parent / "topologies" / "table2.yaml"),
            "--pcap",
            str(SAMPLE),
            "--ingress",
            "n.i1",
            "--line-rate",
            "1Gbps",
            "--speed",
            "2",
        ],
    )
    assert r.exit_code == 2 and "give one of them" in r.output
