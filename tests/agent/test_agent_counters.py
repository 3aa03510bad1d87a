# SPDX-License-Identifier: Apache-2.0
"""Counters that jump: another BF-Runtime client may clear the switch's counters under
the agent, and a topology change may move a pair's ingress port to another pipe. A counter read
below its last reading by more than 2^63 was cleared (a 64-bit byte counter takes 5.8 years to
count 2^63 bytes at 400 Gb/s; a wrap reads as a small difference, tests/agent/test_agent_core.py): the
agent re-baselines it, logs one line and decides nothing on it that period -- τ does not move on a
rate of ~2^64 and no pair is judged a liar on it (spec §7.4, §9). A pair's f_est cell is written in
the pipe of its ingress port alone and reads sum the pipes (spec §7.4), so the cell a moved pair
left in its old pipe is cleared at take-over. On the software switch; tests/sde/test_switchd.py
repeats both with the SDE's client on bf_switchd."""

from __future__ import annotations

import logging

import pytest

from agentkit import LPF, TWO_PIPES_NODE, Clock, make_agent
from ffs.agent.core import Agent
from ffs.core import constants, p4names
from ffs.core.frames import ipv4_frame, lie_ip_len
from ffs.core.tables import f_from_lpf
from ffs.core.topology import load
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import Pipeline


def tau_of(snap, egress: str = "p3") -> float:
    return next(e.tau for e in snap.egresses if e.egress == egress)


def test_counters_cleared_by_another_client_move_nothing(caplog):
    """The dumbbell's flood and its 8 Mb/s sender: h1 under its 10 Mb/s share, so p3's exact τ is
    (20 - 8) / 10 = 1.2 (Algorithm 2), above 1 where a cut shows. One frame of the flood's pair
    lied earlier (below the quarantine's 1 %). Then another client clears every counter."""
    agent = make_agent(seed=5)
    clock = Clock(agent)
    clock.run(1.5)
    tau = tau_of(agent.snapshot)
    assert tau > 1.1, tau
    flood_frame = lie_ip_len(ipv4_frame("10.0.2.1", "10.0.3.1", 100), 20)  # 118 bytes: 0.2 % of the pair's
    agent.driver.pipeline.process(flood_frame, 2, int((clock.t - 0.01) * 1e9))
    agent.step(clock.t - 0.005)
    assert not agent.quarantined
    other = LocalDriver(agent.driver.control)  # another client of the same switch
    for c in p4names.COUNTERS:
        other.reset_counters(c.name)
    with caplog.at_level(logging.WARNING, logger="ffs.agent"):
        res = clock.run(0.5)
    taus = [tau_of(p["value"]) for p in res.periods]
    assert taus[0] == tau, (tau, taus[:3])  # the period of the clear decides nothing
    assert min(taus) > 0.9 * tau, (tau, taus)  # and τ stays where the flood keeps it (a 25 % cut is 0.75)
    assert not agent.quarantined, agent.quarantined
    lines = [r.getMessage() for r in caplog.records if "went backwards" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0], lines


def two_pipes(tmp_path, a_port: int):
    path = tmp_path / f"two-pipes-{a_port}.yaml"
    path.write_text(TWO_PIPES_NODE.replace("port: 0,", f"port: {a_port},"))
    return load(path)


def test_a_pair_moved_to_another_pipe_leaves_no_estimate_behind(tmp_path):
    """Interface a on device port 0 (pipe 0), then, in a new topology, on port 130 (pipe 1): the same
    interfaces, so the same pair index. Its F must read what the new pipe estimates, not the sum
    with the estimate its last packet left in pipe 0."""
    pipe = Pipeline(2)
    first = Agent(LocalDriver(pipe), two_pipes(tmp_path, 0), "s1", lpf=LPF)
    first.install(now_s=0.0)
    frame = ipv4_frame("10.0.1.1", "10.0.2.1", 1000)
    for k in range(200):
        pipe.process(frame, 0, k * 100_000)  # a -> b, 80 Mb/s for 20 ms
    (pid,) = [p.pid for p in first.pairs() if (p.ingress, p.egress) == ("a", "b")]

    def cells() -> list[int]:  # the switch's own per-pipe view of the cell
        return first.driver.control.read_registers(p4names.F_EST.name, [pid])[pid]

    assert cells()[0] > 0
    second = Agent(LocalDriver(pipe), two_pipes(tmp_path, 130), "s1", lpf=LPF)
    second.install(now_s=1.0)
    assert cells()[0] == 0
    for k in range(200):
        pipe.process(frame, 130, 1_000_000_000 + k * 200_000)  # now from pipe 1, at half the rate
    snap = second.step(1.05)
    now = cells()
    assert now[0] == 0 and now[1] > 0, now
    f = next(p.f_bps for p in snap.pairs if p.pid == pid)
    scale_down = constants.LPF_SCALE_DOWN if LPF.scale_down is None else LPF.scale_down
    assert f == pytest.approx(f_from_lpf(now[1], LPF.time_constant_ns, scale_down)), (f, now)
