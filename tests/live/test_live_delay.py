# SPDX-License-Identifier: Apache-2.0
"""Round-trip times through the live software switch (root): a port's `delay` holds its frames that
long after its queue sent them, so a UDP echo from h1 to h3 takes d(p3) + d(p1) and one from h2,
whose port has no delay, takes d(p3) alone, plus the forwarding overhead the same path shows
without delays. The frames on the wire are not in the queue: a sender filling more bytes of wire
than the queue's buffer holds loses nothing."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from ffs.lab.liverun import LiveNode, live_node
from livekit import sender_and_flood

SPEED = 20e6  # bit/s, every port
D1, D3 = 0.010, 0.006  # s: the one-way delays of p1 and p3; p2 has none
BUFFER = 16384  # bytes of p3's queue, below the 25 KB that 10 ms of wire hold at 20 Mb/s
# what a round trip through the Python switch costs beyond its wires: the epoll timeout's 1 ms
# granularity on each of the two hops and the switch's and echo's scheduling on a loaded 2-core machine
OVERHEAD_S = 0.004


def topology(name: str, d1: float, d3: float) -> str:
    def delay(d: float) -> str:
        return f", delay: {d * 1e3:g}ms" if d else ""

    return sender_and_flood(name, SPEED, SPEED, SPEED / 2, p1=delay(d1), p3=delay(d3))


def rtts(live: LiveNode, host: str, duration_s: float = 2.0) -> list[float]:
    """UDP echo round trips (s) from `host` to h3, every 50 ms."""
    p = subprocess.run(
        live.exec_args(
            host,
            sys.executable,
            "-m",
            "ffs.lab.cca",
            "probe",
            "--dst=10.0.3.1",
            "--interval=0.05",
            f"--duration={duration_s}",
        ),
        capture_output=True,
        text=True,
        timeout=duration_s + 20,
    )
    out = [json.loads(x)["rtt_ms"] / 1e3 for x in p.stdout.splitlines()]
    assert len(out) >= 0.8 * duration_s / 0.05, (p.stdout, p.stderr)  # a lost probe would be a bug here: no load
    return out[2:]  # the first ones also resolve the neighbours (ARP)


def run(work: Path, d1: float, d3: float, extra: list[str] | None = None) -> AbstractContextManager[LiveNode]:
    name = f"livedl{round(d1 * 1e3)}x{os.getpid() % 10000}"
    work.mkdir(parents=True, exist_ok=True)
    f = work / f"{name}.yaml"
    f.write_text(topology(name, d1, d3))
    return live_node(f, work, switch_args=extra or [])


def test_round_trip_times_are_the_wires_delays(tmp_path):
    with run(tmp_path / "0", 0.0, 0.0) as live:
        echo = live.spawn(live.exec_args("h3", sys.executable, "-m", "ffs.lab.cca", "echo", "--duration=30"))
        time.sleep(0.5)
        base = statistics.median(rtts(live, "h1"))
        echo.terminate()
    with run(tmp_path / "d", D1, D3) as live:
        live.spawn(live.exec_args("h3", sys.executable, "-m", "ffs.lab.cca", "echo", "--duration=30"))
        time.sleep(0.5)
        h1, h2 = rtts(live, "h1"), rtts(live, "h2")
    # h1 -> p3 (D3) -> h3 -> p1 (D1) -> h1; h2's answer leaves p2, which has no wire delay
    for got, wire in ((h1, D1 + D3), (h2, D3)):
        assert min(got) >= wire, (got, wire)  # never early
        assert statistics.median(got) == pytest.approx(wire + base, abs=OVERHEAD_S), (got, wire, base)


def test_frames_on_the_wire_are_not_in_the_queue(tmp_path):
    """15 Mb/s through p3 (20 Mb/s, 16 KB of queue, 10 ms of wire): 18.75 KB are in flight at any time,
    more than the buffer; a queue that counted them would drop about a seventh of the frames."""
    rate = 15e6
    with run(tmp_path, 0.0, 0.010, ["--buffer=3=16384"]) as live:
        rx = live.receive("h3", 5)
        time.sleep(0.3)
        live.send("h1", "10.0.3.1", rate, 4.5)
        lines = [json.loads(x) for x in rx.stdout]
        rx.wait()
    steady = [x["rates_bps"].get("10.0.1.1", 0.0) for x in lines if 1.5 <= x["t"] <= 4]
    assert steady and statistics.mean(steady) >= 0.95 * rate, lines
