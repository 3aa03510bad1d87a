# SPDX-License-Identifier: Apache-2.0
"""A port that drains slower than its speed, live (root): the software switch over veth sends p3 at
a fraction of its speed (the topology's `drain`: a shaper, a PFC pause), the agent as it ships
(100 ms period, the queue guard on) follows what the port drains (spec §9, item 8).

The expectations are the spec's on the DRAINED capacity D = drain · speed. A sender at 0.8 of its
share of D keeps its demand (Corollary 1 on D) within the rule's own arithmetic: the climb probes
one DRAIN_MARGIN above D, whose excess the queue's tail drop takes from every sender in proportion
(≤ 1/32 of its rate while the probe stands), and the live bar of tests/live/test_live_tm.py's 2 %
for a receiver's 1 s bins: ≥ 1 − 1/32 − 0.02 of the demand. Without the rule the tail drop decides
and it keeps 82 % (80 % drain) and 42 % (50 %) (tests/switch/test_slow_drain.py's mutation). After
a pause the target in force is the configured one within the spec's bound, as in virtual time
(test_slow_drain.py): 5 + log2(1/DRAIN_FLOOR) periods of climbing once the queue has drained (its
buffer's time, 39 ms here, and the period's phase: 2 periods) and 2 of reading."""

from __future__ import annotations

import json
import math
import os
import threading
import time

import pytest

from ffs.agent import drain_rule
from ffs.core.api_client import call
from ffs.core.program import LpfConfig
from ffs.core.topology import load
from ffs.lab.liverun import live_node
from livekit import sender_and_flood

SPEED, SIZE, PERIOD = 20e6, 1500, 0.1
FRACTION = 0.5  # the sender's share of the port
KEEP = 1 - drain_rule.DRAIN_MARGIN - 0.02  # the module docstring's bound


def topology(name: str, drain: str) -> str:
    return sender_and_flood(name, SPEED, 6 * SPEED, FRACTION * SPEED, p3=f", drain: {drain}")


class StatusPoll(threading.Thread):
    """The agent's p3 and pairs four times a period: (the agent's period's time, on this host's
    monotonic clock; egress status; any pair quarantined), once per period."""

    def __init__(self, sock) -> None:
        super().__init__(daemon=True)
        self.sock, self.stop, self.seen = sock, threading.Event(), []

    def run(self) -> None:
        while not self.stop.wait(PERIOD / 4):
            st = call(self.sock, {"op": "status"}, timeout_s=2)
            if self.seen and self.seen[-1][0] == st["time_s"]:
                continue
            p3 = next(e for e in st["egresses"] if e["egress"] == "p3")
            self.seen.append((st["time_s"], p3, any(p["quarantined"] for p in st["pairs"])))


def run(tmp_path, drain: str, demand: float, seconds: float):
    """The sender at `demand` and a 6x flood for `seconds` from when the agent is up: the receiver's
    1 s bins (each from its start, in seconds from the switch's start: the receiver's own start,
    a moment later, makes them later still), the agent's p3 over time (the same time base)."""
    name = f"livedrain{os.getpid() % 10000}"
    topo_file = tmp_path / f"{name}.yaml"
    topo_file.write_text(topology(name, drain))
    with live_node(topo_file, tmp_path) as live:
        poll = StatusPoll(live.agent_socket)
        poll.start()
        begin = time.monotonic()
        rx = live.receive("h3", seconds + 0.5)
        time.sleep(0.3)
        for host, rate in (("h1", demand), ("h2", 6 * SPEED)):
            live.send(host, "10.0.3.1", rate, seconds, f"--size={SIZE}")
        lines = [json.loads(x) for x in rx.stdout]
        rx.wait()
        poll.stop.set()
        poll.join()
        zero = live.switch_ready_s
    bins = [
        (begin - zero + x["t"] - 1, x["rates_bps"].get("10.0.1.1", 0), x["rates_bps"].get("10.0.2.1", 0)) for x in lines
    ]
    return bins, [(t - zero, e, q) for t, e, q in poll.seen]


def settle_s(tmp_path, drain: str) -> float:
    """The estimators close in on F within 2 % after 4 τ_F (spec §4), τ_F sized for the node."""
    topo_file = tmp_path / "settle.yaml"
    topo_file.write_text(topology("settle", drain))
    return max(2.0, 4 * LpfConfig().for_node(load(topo_file).node("s1")).time_constant_ns * 1e-9)


@pytest.mark.parametrize("drain", [0.8, 0.5])
def test_a_sender_below_its_share_of_the_drained_port_keeps_its_demand_live(tmp_path, drain):
    """p3 drains `drain` of its speed from the start: over the seconds after the estimators settled
    the sender keeps ≥ KEEP of its demand, the flood ≤ the rest of D (+5 %, the live bar of
    test_live_tm.py), no pair is quarantined, and the target in force averages D within the cut's
    and the probe's margins."""
    drained = drain * SPEED
    demand = 0.8 * FRACTION * drained
    start = settle_s(tmp_path, str(drain)) + 1.0  # the agent's start, a second after the switch's
    bins, seen = run(tmp_path, str(drain), demand, start + 4.5)
    steady = [(s, f) for t, s, f in bins if start <= t <= start + 3.5]
    sender, flood = (sum(x[k] for x in steady) / len(steady) for k in (0, 1))
    held = [e for t, e, _ in seen if start <= t <= start + 4]
    mean = sum(e["target"] for e in held) / len(held)
    kbps = [(round(t, 1), round(s / 1e3)) for t, s, _ in bins]
    why = (
        f"drain {drain}: sender {sender / 1e6:.3f} of {demand / 1e6:.3f} Mb/s, flood {flood / 1e6:.3f}, "
        f"mean target {mean / 1e6:.3f} of D {drained / 1e6:.3f}; the sender's bins (t, kb/s) {kbps}"
    )
    print(why)
    assert len(steady) >= 3, why
    assert sender >= KEEP * demand, why
    assert flood <= 1.05 * (drained - demand), why
    assert not any(q for _, _, q in seen), why
    margin = drain_rule.DRAIN_MARGIN
    assert drained * (1 - margin) ** 2 <= mean <= drained * (1 + margin) ** 2, why


def test_the_target_comes_back_after_a_pause_live(tmp_path):
    """p3 paused for 300 ms once the estimators settled: the target in force falls while it is
    paused, is the configured one again within the module docstring's bound (counted in the
    agent's periods, each seen once) after the pause ends, and stays; the sender keeps ≥ KEEP of
    its demand from then on; no pair is quarantined."""
    start = settle_s(tmp_path, "1") + 1.0
    pause, length = start + 1.0, 0.3
    demand = 0.8 * FRACTION * SPEED
    bins, seen = run(
        tmp_path, f"[{{at: {pause:g}, factor: 0}}, {{at: {pause + length:g}, factor: 1}}]", demand, pause + 4
    )
    trace = [(round(t, 2), round(e["drain_factor"], 3)) for t, e, _ in seen if t >= pause - 0.3]
    why = f"pause at {pause:.2f} s for {length} s; (t, factor): {trace}"
    assert min(e["drain_factor"] for t, e, _ in seen if pause < t <= pause + length + PERIOD) < 1.0, why
    # in the agent's periods, as the spec counts them (on a loaded machine a period runs late)
    bound = 5 + math.log2(1 / drain_rule.DRAIN_FLOOR) + 2 + 2
    back = next((t for t, e, _ in seen if t > pause + length and e["drain_factor"] == 1.0), math.inf)
    periods = sum(1 for t, _, _ in seen if pause + length < t <= back)
    why += f"; back {back - pause - length:.2f} s, {periods} periods after the pause"
    print(why.split("; (t")[0], why.split("]")[-1])
    assert back < math.inf, why
    assert all(e["drain_factor"] == 1.0 for t, e, _ in seen if t >= back), why
    after = [s for t, s, _ in bins if back <= t <= pause + 3]
    assert after and sum(after) / len(after) >= KEEP * demand, why + f"; the sender after it: {after}"
    assert not any(q for _, _, q in seen), why
    # a pause that begins inside a drain window cuts to what the window drained (a mix of before
    # and during the pause, not the floor): the climb forgets that rate after 3 periods past it
    assert periods <= bound, why
