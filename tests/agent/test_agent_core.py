# SPDX-License-Identifier: Apache-2.0
"""The agent against the software switch: matrix changes move the data plane's drops, invalid
matrices change nothing, failures roll back, and a restarted agent restores the applied matrix."""

import math
import time

import pytest

from agentkit import LPF, Clock, dump, make_agent
from ffs.agent.core import MatrixError
from ffs.agent.state import StateStore
from ffs.core import p4names, tables
from ffs.core.allocator import allocate
from ffs.core.entries import Update
from ffs.driver.base import DriverError
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import Pipeline

M = 1e6


def rates(res, seconds):
    return {s: res.rate_bps(s, seconds / 2, seconds) for s in ("well-behaved", "flood")}


def test_dumbbell_packet_level_matches_exact_and_matrix_change_moves_drops(tmp_path):
    agent = make_agent(tmp_path)
    clock = Clock(agent)
    exact = {s.name: s.rate for s in allocate(agent.topology).streams}
    got = rates(clock.run(2.0), 2.0)
    assert got["well-behaved"] == pytest.approx(exact["well-behaved"], rel=0.05)  # 8 Mbps: all of it
    assert got["flood"] == pytest.approx(exact["flood"], rel=0.1)  # 12 Mbps, cut from 60
    # the operator gives p1 less: its stream is now constrained to its share
    changes = agent.apply_matrix({**agent.fairness, "p3": {"p1": 4 * M, "p2": 16 * M}}, who="test")
    assert {(c["ingress"], c["new"]) for c in changes} == {("p1", 4 * M), ("p2", 16 * M)}
    got = rates(clock.run(2.0), 2.0)
    assert got["well-behaved"] == pytest.approx(4 * M, rel=0.1)
    assert got["flood"] == pytest.approx(16 * M, rel=0.1)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"p3": {"p9": 1 * M}}, "unknown ingress interface 'p9'"),
        ({"q3": {"p1": 1 * M}}, "unknown egress interface 'q3'"),
        ({"p3": {"p1": -1.0}}, "negative"),
        ({"p3": {"p1": math.nan}}, "finite"),
        ({"p3": {"p1": 15 * M, "p2": 15 * M}}, "sum to 30 Mbps, above its capacity 20 Mbps"),  # human units
        ({"p3": "lots"}, "expected ingress -> rate"),
        ({"p3": {"p1": 0.0, "p2": 0.0}}, "sum to 0"),
        ({"p3": {"p1": True}}, "finite rate"),
    ],
)
def test_invalid_matrix_changes_nothing(tmp_path, bad, message):
    agent = make_agent(tmp_path)
    before, fairness = dump(agent.driver), dict(agent.fairness)
    with pytest.raises(MatrixError, match=message):
        agent.apply_matrix(bad)
    assert dump(agent.driver) == before
    assert agent.fairness == fairness
    assert not (tmp_path / "matrix-s1.json").exists() and agent.store.read_audit() == []


class FailingDriver(LocalDriver):
    """The switch refuses every write (a lost session, a full table): reads still work."""

    def write(self, updates):
        raise DriverError("write refused by the switch")


def test_switch_refusal_keeps_old_matrix(tmp_path):
    agent = make_agent(tmp_path)
    before, fairness = dump(agent.driver), dict(agent.fairness)
    agent.driver = FailingDriver(agent.driver.control)
    with pytest.raises(DriverError):
        agent.apply_matrix({**agent.fairness, "p3": {"p1": 5 * M, "p2": 5 * M}})
    assert agent.fairness == fairness and dump(agent.driver) == before
    assert not (tmp_path / "matrix-s1.json").exists()


class PoisonedDriver(LocalDriver):
    """The switch accepts the first updates of a batch and refuses the last one (here: a duplicate
    insert), so the software switch's own rollback is what keeps the old matrix."""

    def write(self, updates):
        pair = next((u for u in updates if u.entry.table == p4names.PAIRS.name), None)
        if pair is not None:
            updates = list(updates) + [Update("insert", pair.entry)]  # that key exists by now
        super().write(updates)


def test_switch_failing_mid_batch_keeps_old_matrix_and_agent_state(tmp_path):
    agent = make_agent(tmp_path)
    Clock(agent).run(0.5)
    before, fairness, taus = dump(agent.driver), dict(agent.fairness), dict(agent.taus)
    agent.driver = PoisonedDriver(agent.driver.control)
    with pytest.raises(DriverError, match="refused, nothing applied"):
        agent.apply_matrix({**agent.fairness, "p3": {"p1": 5 * M, "p2": 5 * M}}, who="bob")
    assert dump(agent.driver) == before
    assert agent.fairness == fairness and agent.taus == taus
    # no matrix file, no staged file; the attempt is in the audit log, marked aborted
    assert sorted(f.name for f in tmp_path.iterdir()) == ["audit.jsonl", "program-s1.json", "tau-s1.json"]
    [rec] = agent.store.read_audit()
    assert (rec["who"], rec["status"]) == ("bob", "aborted") and "refused" in rec["why"]


def test_adding_and_removing_egress_columns(tmp_path):
    agent = make_agent(tmp_path)
    full = dict(agent.fairness)
    clock = Clock(agent)
    agent.apply_matrix({"p3": full["p3"]})
    assert {e.key["egress_port"].value for e in agent.driver.read_table(p4names.PAIRS.name)} == {3}
    assert [e.key["egress_port"].value for e in agent.driver.read_table(p4names.EGRESS_PARAMS.name)] == [3]
    clock.run(0.3)
    agent.apply_matrix(full)  # the pairs toward p1 and p2 come back; their counters have no baseline yet
    snap = agent.step(clock.t + 0.05)
    assert {e.egress for e in snap.egresses} == {"p1", "p2", "p3"}
    assert len(agent.driver.read_table(p4names.PAIRS.name)) == 9
    res = clock.run(1.0)  # and the loop keeps running: p3 still isolates the well-behaved sender
    assert res.rate_bps("well-behaved", 0.5, 1.0) == pytest.approx(8 * M, rel=0.05)


class WrappingDriver(LocalDriver):
    """Counters that started just below 2^64 (a long-running switch): every read is offset."""

    OFFSET = (1 << 64) - 5_000

    def read_counters(self, name, indices=None):
        from ffs.core.entries import CounterValue

        wrap = 1 << 64
        return {
            i: CounterValue((v.packets + self.OFFSET) % wrap, (v.bytes + self.OFFSET) % wrap)
            for i, v in super().read_counters(name, indices).items()
        }


def test_counter_wrap_does_not_disturb_rates_or_tau(tmp_path):
    plain = make_agent(seed=4)
    wrapped = make_agent(seed=4, driver=WrappingDriver(Pipeline(4)))
    a, b = Clock(plain).run(0.6), Clock(wrapped).run(0.6)
    assert [p["value"].to_dict() for p in a.periods] == [p["value"].to_dict() for p in b.periods]
    assert any(e.congested for e in wrapped.snapshot.egresses)


class LateReadDriver(LocalDriver):
    """Counters that grow with wall time at exactly RATE, read through an RPC whose latency swings
    between 0 and 2 x 40 ms from one period to the next (a switch starved of CPU answers late).
    Each value is sampled in the middle of its read, as a real switch samples its counters."""

    RATE = 80e6  # b/s of frames at every pair and egress
    FRAME = 1000  # bytes per packet

    def __init__(self, pipeline) -> None:
        super().__init__(pipeline)
        self.steps = 0
        self.t0 = time.monotonic()

    def read_counters(self, name, indices=None):
        from ffs.core.entries import CounterValue

        if name == p4names.PAIR_BYTES.name:  # a step's first read: every read of one step shares a latency
            self.steps += 1
        half = 0.04 if self.steps % 2 else 0.0
        time.sleep(half)
        bytes_ = int((time.monotonic() - self.t0) * self.RATE / 8)
        time.sleep(half)
        if name in (p4names.MALFORMED.name, p4names.PAIR_MALFORMED.name):  # no frame lies here
            bytes_ = 0
        return {i: CounterValue(bytes_ // self.FRAME, bytes_) for i in (indices or [])}


def test_rates_hold_when_counter_reads_come_back_late():
    """The loop's rates come from the time between the reads of each counter, not between the
    starts of the periods: timed by the periods, one whose reads took 80 ms longer than the last
    would measure its rates 80 ms / 100 ms too high, and tau would jump (spikes under load)."""
    agent = make_agent(driver=LateReadDriver(Pipeline(3)))
    want = LateReadDriver.RATE * (
        1 + 20 / LateReadDriver.FRAME
    )  # a line rate: each frame + 20 bytes of preamble and gap
    seen = []
    for _ in range(7):
        snap = agent.step()
        seen += [p.rate_bps for p in snap.pairs] + [e.accepted_bps for e in snap.egresses]
        time.sleep(0.1)
    seen = [x for x in seen if x]  # the first step has no interval yet
    assert len(seen) >= 6 * (len(agent.pairs()) + 1)
    assert max(abs(x / want - 1) for x in seen) < 0.1, [round(x / want, 3) for x in seen]


def test_on_period_adapter_takes_either_signature():
    agent = make_agent()
    other = LocalDriver(agent.driver.control)
    first = agent.on_period(1_000_000_000)
    snap = agent.on_period(1_100_000_000, other)
    assert first.time_s == 1.0 and snap.time_s == pytest.approx(1.1) and agent.driver is other


def test_restart_restores_applied_matrix(tmp_path):
    agent = make_agent(tmp_path)
    new = {**agent.fairness, "p3": {"p1": 3 * M, "p2": 12 * M}}
    agent.apply_matrix(new, who="alice")
    # a new agent process, and a fresh pipeline (the switch was reloaded too)
    again = make_agent(tmp_path, seed=9)
    assert again.fairness == new
    lm = {
        (e.key["ingress_port"].value, e.key["egress_port"].value): tables.lm_of(e.params)
        for e in again.driver.read_table(p4names.PAIRS.name)
    }
    assert lm[(1, 3)] == tables.lm_code(3 * M, LPF.time_constant_ns, LPF.scale_down)
    assert lm[(2, 3)] == tables.lm_code(12 * M, LPF.time_constant_ns, LPF.scale_down)
    audit = StateStore(tmp_path).read_audit()
    assert audit[-1]["who"] == "alice" and len(audit[-1]["changes"]) == 2


def test_pipeline_reload_is_detected_and_state_reapplied(tmp_path):
    agent = make_agent(tmp_path)
    agent.apply_matrix({**agent.fairness, "p3": {"p1": 2 * M, "p2": 2 * M}})
    assert agent.ensure_installed() is False
    agent.driver = LocalDriver(Pipeline(5))  # the program was reloaded: empty tables, new id
    assert agent.ensure_installed() is True
    lm = {
        (e.key["ingress_port"].value, e.key["egress_port"].value): tables.lm_of(e.params)
        for e in agent.driver.read_table(p4names.PAIRS.name)
    }
    assert lm[(1, 3)] == tables.lm_code(2 * M, LPF.time_constant_ns, LPF.scale_down)


def test_ffs_c85_target(tmp_path):
    agent = make_agent(tmp_path)
    import dataclasses

    agent.node = dataclasses.replace(agent.node, target_factor=0.85)
    clock = Clock(agent)
    res = clock.run(2.0)
    total = sum(rates(res, 2.0).values())
    assert total == pytest.approx(0.85 * 20 * M, rel=0.06)  # A settles at the target, not the line rate


def test_an_lpf_spec_matches_its_read_back_within_the_targets_rounding():
    """Tofino stores LPF time constants in a float format of its own: tofino-model reads 20 ms back
    as 19.980488 ms. The agent's slow check must take that for the spec it wrote (rewriting all
    4096 specs every check would stall its τ loop on tofino-model), and still see a real change."""
    from ffs.core.entries import LpfSpec

    spec = LpfSpec("RATE", 20e6, 20e6, 4)
    assert spec.matches(LpfSpec("RATE", 19980488.0, 19980488.0, 4))
    assert not spec.matches(LpfSpec("RATE", 10e6, 20e6, 4))
    assert not spec.matches(LpfSpec("SAMPLE", 20e6, 20e6, 4))
    assert not spec.matches(LpfSpec("RATE", 20e6, 20e6, 5))
