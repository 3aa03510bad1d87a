# SPDX-License-Identifier: Apache-2.0
"""The agent's answer to lying lengths (spec §7.3, §9; docs/security.md): a pair whose frames the
egress drops for disagreeing with their IP length loses its share (set_held_pair with lm = 0) for
quarantine_s, in its desired state, so neither the slow check nor a matrix change lifts it early;
an honest pair is never touched. The dumbbell node on an in-process software switch, with the queue
guard off (`make_agent`): these bursts run at 100 Mb/s into a 20 Mb/s port, where the guard (spec
§7.7) would drop the liar's over-share frames before the frame check counts them, and the
quarantine's arithmetic is what is tested here (tests/live/test_live_attacks.py runs both together)."""

from __future__ import annotations

import math

import pytest

from agentkit import make_agent
from ffs.core import p4names, tables
from ffs.core.entries import Exact
from ffs.core.frames import ipv4_frame, lie_ip_len

M = 1e6
LIAR = ipv4_frame("10.0.2.1", "10.0.3.1", 1250)  # h2 -> h3: pair p2 -> p3
HEAVY = 1500 + 4  # the heaviest claim p2 (IP MTU 1500) admits (spec §4), heavier than the frame: λ alone decides


def pair_entry(agent, ingress: str, egress: str):
    ports = agent.node.interfaces
    key = {"ingress_port": Exact(ports[ingress].port), "egress_port": Exact(ports[egress].port)}
    (e,) = [e for e in agent.driver.read_table(p4names.PAIRS.name) if e.key == key]
    return e


def send(agent, frame: bytes, port: int, t0: float, n: int) -> None:
    pipe = agent.driver.pipeline
    for k in range(n):
        pipe.process(frame, port, int((t0 + k * 1e-4) * 1e9))


def status(agent, ingress: str):
    (p,) = [p for p in agent.snapshot.pairs if p.ingress == ingress and p.egress == "p3"]
    return p


def test_a_lying_pair_is_quarantined_kept_and_released(tmp_path):
    agent = make_agent(tmp_path)
    honest = pair_entry(agent, "p2", "p3")
    pid = honest.params["pid"]
    assert honest.params["nlm"] != 0  # a real share: lm > 0
    agent.step(0.0)  # the baseline
    send(agent, LIAR, 2, 0.001, 50)  # honest frames first: nothing happens
    agent.step(0.1)
    assert not status(agent, "p2").quarantined and pair_entry(agent, "p2", "p3") == honest
    send(agent, lie_ip_len(LIAR, HEAVY), 2, 0.101, 50)
    agent.step(0.2)
    st = status(agent, "p2")
    assert st.quarantined and st.malformed == 50, st
    assert pair_entry(agent, "p2", "p3").params == tables.pair_params(pid, 0)  # M_F = 1: no share
    assert not status(agent, "p1").quarantined
    # the slow check finds nothing to repair: the quarantine is the desired state
    assert agent.check() == 0
    # a matrix change that moves p2's share does not lift it
    agent.apply_matrix({**agent.fairness, "p3": {"p1": 8 * M, "p2": 12 * M}}, who="test")
    assert pair_entry(agent, "p2", "p3").params == tables.pair_params(pid, 0)
    # lying again renews it; once quarantine_s has passed without lies, the share comes back
    send(agent, lie_ip_len(LIAR, HEAVY), 2, 5.0, 10)
    agent.step(5.1)
    agent.step(14.9)
    assert status(agent, "p2").quarantined
    agent.step(15.2)
    assert not status(agent, "p2").quarantined
    released = pair_entry(agent, "p2", "p3")
    lm = tables.lm_code(agent.current_node().share("p2", "p3"), agent.lpf.time_constant_ns, agent.lpf.scale_down)
    assert released.params == tables.pair_params(pid, lm) != tables.pair_params(pid, 0)


def test_lies_below_the_fraction_or_with_quarantine_off_change_nothing(tmp_path):
    agent = make_agent(tmp_path)
    agent.step(0.0)
    honest = pair_entry(agent, "p2", "p3")
    send(agent, LIAR, 2, 0.001, 200)
    send(agent, lie_ip_len(LIAR, 20), 2, 0.03, 1)  # 1 of 201 frames: 0.5 % of the pair's bytes
    agent.step(0.1)
    assert status(agent, "p2").malformed == 1 and not status(agent, "p2").quarantined
    assert pair_entry(agent, "p2", "p3") == honest
    agent.quarantine_s = 0
    send(agent, lie_ip_len(LIAR, 20), 2, 0.101, 50)
    agent.step(0.2)
    assert status(agent, "p2").malformed == 50 and not status(agent, "p2").quarantined
    assert pair_entry(agent, "p2", "p3") == honest


@pytest.mark.parametrize("value", ["-1", "1e7", "nan"])
def test_bad_quarantine_options_are_refused(value):
    from click.testing import CliRunner

    from ffs.cli.agent import main

    res = CliRunner().invoke(main, ["--topology", "topologies/dumbbell.yaml", "--node", "s1", "--quarantine-s", value])
    assert res.exit_code == 2 and "--quarantine-s" in res.output, res.output


def test_a_restarted_agent_resumes_the_quarantine(tmp_path):
    """The switch holds the quarantine (lm = 0 where the pair has a share): a new agent on the same
    switch keeps it for a full quarantine_s instead of handing the liar its share back, and writes
    nothing on take-over."""
    from ffs.agent.core import Agent

    first = make_agent(tmp_path)
    first.step(0.0)
    send(first, lie_ip_len(LIAR, HEAVY), 2, 0.001, 50)
    first.step(0.1)
    pid = pair_entry(first, "p2", "p3").params["pid"]
    assert pid in first.quarantined
    writes = []
    driver = first.driver
    real_write = driver.write
    driver.write = lambda batch: (writes.append(batch), real_write(batch))[1]
    second = Agent(driver, first.topology, "s1", lpf=first.lpf, quarantine_s=10.0, guard_timer_ns=None)
    second.install(now_s=0.2)
    assert second.quarantined == {pid: pytest.approx(10.2)}, second.quarantined
    assert writes == [], writes
    assert pair_entry(second, "p2", "p3").params == tables.pair_params(pid, 0)
    second.step(0.3)
    second.step(10.3)  # no lies since: released
    assert pair_entry(second, "p2", "p3").params != tables.pair_params(pid, 0)


def test_a_pair_whose_frames_partly_lie_keeps_the_rest_of_its_share(tmp_path):
    """The neighbour on p2 carries honest senders and a liar: 150 honest frames and 50 lying ones
    of the same size, all admitted (p3 uncongested). λ = 1/4 of the pair's bytes lied, so the pair
    keeps 3/4 of its share (spec §9): lm is the code of 0.75·M (±1 for the code's rounding, spec
    §3), not 0. A restarted agent with the state directory resumes exactly that; the state's
    τ file carries the fraction; without it the entry's action (set_held_pair) marks the quarantine
    and its code gives the fraction."""
    from ffs.agent.core import Agent
    from ffs.agent.state import StateStore

    agent = make_agent(tmp_path)
    agent.step(0.0)
    pid = pair_entry(agent, "p2", "p3").params["pid"]
    for k in range(200):
        frame = lie_ip_len(LIAR, 20) if k % 4 == 3 else LIAR
        agent.driver.pipeline.process(frame, 2, int((0.001 + k * 1e-4) * 1e9))
    agent.step(0.1)
    st = status(agent, "p2")
    assert st.quarantined and st.malformed == 50 and st.withheld == pytest.approx(0.25), st
    share = agent.current_node().share("p2", "p3")
    want = tables.lm_code(0.75 * share, agent.lpf.time_constant_ns, agent.lpf.scale_down)
    held = tables.lm_of(pair_entry(agent, "p2", "p3").params)
    assert abs(held - want) <= 1 and held > 0, (held, want)
    assert pair_entry(agent, "p2", "p3").action_name == "set_held_pair"  # τ = 1 for it (spec §9)
    assert agent.check() == 0  # the withheld share is the desired state
    writes = []
    driver = agent.driver
    real_write = driver.write
    driver.write = lambda batch: (writes.append(batch), real_write(batch))[1]
    second = Agent(
        driver,
        agent.topology,
        "s1",
        lpf=agent.lpf,
        store=StateStore(tmp_path),
        telemetry_period_s=0.1,
        guard_timer_ns=None,
    )
    second.install(now_s=0.2)
    assert second.quarantine.level == {pid: pytest.approx(0.25)} and writes == [], (second.quarantine.level, writes)
    # without the saved fraction the entry's action (set_held_pair) still says it is a quarantine,
    # not a changed matrix: resumed at the fraction its code stands for (one code step: 0.55 %)
    third = Agent(driver, agent.topology, "s1", lpf=agent.lpf, guard_timer_ns=None)
    third.install(now_s=0.3)
    assert third.quarantined and third.quarantine.level[pid] == pytest.approx(0.25, abs=0.006)
    assert pair_entry(third, "p2", "p3").action_name == "set_held_pair"


def test_a_share_raised_across_a_restart_is_not_a_quarantine(tmp_path):
    """The switch holds p1 -> p3 at 2 Mb/s from a matrix change; the agent restarts from the
    topology's matrix (10 Mb/s). The lower code is the old matrix, not a liar's: it is rewritten."""
    from ffs.agent.core import Agent
    from ffs.agent.state import StateStore

    first = make_agent(tmp_path)
    first.apply_matrix({**first.fairness, "p3": {"p1": 2 * M, "p2": 10 * M}}, who="test")
    second = Agent(
        first.driver, first.topology, "s1", lpf=first.lpf, store=StateStore(tmp_path), use_saved_matrix=False
    )
    second.install(now_s=1.0)
    assert not second.quarantined
    assert tables.lm_of(pair_entry(second, "p1", "p3").params) == tables.lm_code(
        10 * M, first.lpf.time_constant_ns, first.lpf.scale_down
    )


def test_light_lies_are_withheld_at_least_what_they_cost_the_port():
    """A pair's frames claim 20 of their 1250 bytes: each weighs w = wire_len(38) / wire_len(1268) =
    84 / 1288 of what it costs the port (spec §4), and a share M' admits τM'/w of its bytes (spec §9).
    At least 1 − w is withheld, so it admits at most τM whatever λ reads: λ read low (frames still
    queued, 0.80 of its bytes counted as lies) still withholds 1 − w; λ read right (1) withholds all;
    at an attack's onset, where w reads high (F the rate now, R the period's mean), λ decides; an
    honest pair half of whose bytes lie (w = 0.53) keeps 1 − λ = 0.5, what it would beside an
    honest sender of the liar's size."""
    from ffs.agent.quarantine import Quarantine
    from ffs.core.entries import CounterValue
    from ffs.core.program import Pair

    pair = Pair(7, "p2", "p3", 2, 3)
    w = 84 / 1288

    def level(lied: int, w_read: float) -> float:
        q = Quarantine(10.0, 0.01)
        q.judge(
            [pair],
            {7: CounterValue(lied, lied * 1268)},
            {7: CounterValue(100, 100 * 1268)},
            {7: CounterValue(0, 0)},
            {7: 1.0},
            0.0,
            {7: w_read},
        )
        return q.level[7]

    assert level(80, w) == pytest.approx(1 - w)
    assert level(100, w) == 1.0
    assert level(95, 0.3) == pytest.approx(0.95)
    assert level(50, 0.5 + 0.5 * w) == pytest.approx(0.5)


def test_heavy_claims_get_their_weight_on_the_code_never_more_than_their_share_in_bytes():
    """A held pair whose claims are heavy (w = F/R > 1, spec §9): λ = 0.1 of its bytes lie and its
    arrivals weigh w = 2.2. At M·(1 − λ) γ admits (1 − λ)M/w of its bytes (load 0.41 of its share);
    the code then carries c = (1 − λ)/0.41 = w, which admits M of them (load 1), and stays there. A
    read of F that lies heavier (w read 10) does not raise c past what the period's bytes weighed;
    a pair γ did not limit (load 0.1) gets at most w; a pair admitted 1.5 times its share under its
    factor (its frames weighed less than c) loses it for the rest of its quarantine, which then
    withholds λ as for any claim. The guard's drain of its egress runs 1 + excess faster while c
    holds."""
    from ffs.agent.quarantine import CODE_STEPS, Quarantine, lm_of, weighted_lm, withheld_lm
    from ffs.core.entries import CounterValue, TableEntry, Update
    from ffs.core.program import Pair

    pair = Pair(7, "p2", "p3", 2, 3)
    q = Quarantine(10.0, 0.01)

    def judge(now: float, w: float, load: float) -> None:
        q.judge(
            [pair],
            {7: CounterValue(10, 1000)},
            {7: CounterValue(100, 10_000)},
            {7: CounterValue(0, 0)},
            {7: 1.0},
            now,
            {7: w},
            {7: load},
        )

    def code(lm: int = 2000) -> int:
        entry = TableEntry(p4names.PAIRS.name, {}, "set_pair", tables.pair_params(7, lm))
        return lm_of(q.withhold(Update("modify", entry)).entry.params["nlm"])

    judge(0.0, 2.2, 0.5)  # the judgement that begins it: no held period to weigh yet
    assert q.level[7] == pytest.approx(0.1) and 7 not in q.factor
    assert code() == withheld_lm(2000, 0.1)
    judge(1.0, 2.2, 0.9 / 2.2)
    assert q.factor[7] == pytest.approx(2.2)
    assert code() == weighted_lm(2000, 2.2) == 2000 + round(CODE_STEPS * math.log2(2.2))
    judge(2.0, 10.0, 1.0)
    assert q.factor[7] == pytest.approx(2.2)
    judge(3.0, 2.2, 0.1)
    assert q.factor[7] == pytest.approx(2.2)
    q.excess = {7: (3, 0.6)}
    drain = TableEntry(p4names.TIMER_PORTS.name, {}, "set_drain", {"port": 3, "drain": 1000})
    assert q.withhold(Update("modify", drain)).entry.params["drain"] == 1600
    judge(4.0, 2.2, 1.5)
    assert 7 not in q.factor and q.withhold(Update("modify", drain)).entry.params["drain"] == 1000
    judge(5.0, 2.2, 0.9 / 2.2)
    assert 7 not in q.factor and code() == withheld_lm(2000, 0.1)
