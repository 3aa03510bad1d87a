"""The agent against the software switch: matrix changes move the data plane's drops, invalid
matrices change nothing, failures roll back, and a restarted agent restores the applied matrix."""

import math

import pytest

from ffs import p4names as N
from ffs import tables as T
from ffs.agent.core import MatrixError
from ffs.agent.state import StateStore
from ffs.allocator import allocate
from ffs.driver.base import DriverError
from ffs.driver.model import LocalDriver
from ffs.switch.pipeline import Pipeline
from agentkit import LPF, Clock, dump, make_agent

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
        ({"p3": {"p1": 15 * M, "p2": 15 * M}}, "above its capacity"),
        ({"p3": "lots"}, "expected ingress -> rate"),
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


def test_restart_restores_applied_matrix(tmp_path):
    agent = make_agent(tmp_path)
    new = {**agent.fairness, "p3": {"p1": 3 * M, "p2": 12 * M}}
    agent.apply_matrix(new, who="alice")
    # a new agent process, and a fresh pipeline (the switch was reloaded too)
    again = make_agent(tmp_path, seed=9)
    assert again.fairness == new
    lm = {(e.key["ingress_port"].value, e.key["egress_port"].value): e.params["lm"] for e in again.driver.read_table(N.PAIRS.name)}
    assert lm[(1, 3)] == T.lm_code(3 * M, LPF.time_constant_ns, LPF.scale_down)
    assert lm[(2, 3)] == T.lm_code(12 * M, LPF.time_constant_ns, LPF.scale_down)
    audit = StateStore(tmp_path).read_audit()
    assert audit[-1]["who"] == "alice" and len(audit[-1]["changes"]) == 2


def test_pipeline_reload_is_detected_and_state_reapplied(tmp_path):
    agent = make_agent(tmp_path)
    agent.apply_matrix({**agent.fairness, "p3": {"p1": 2 * M, "p2": 2 * M}})
    assert agent.ensure_installed() is False
    agent.driver = LocalDriver(Pipeline(5))  # the program was reloaded: empty tables, new id
    assert agent.ensure_installed() is True
    lm = {(e.key["ingress_port"].value, e.key["egress_port"].value): e.params["lm"] for e in agent.driver.read_table(N.PAIRS.name)}
    assert lm[(1, 3)] == T.lm_code(2 * M, LPF.time_constant_ns, LPF.scale_down)


def test_ffs_c85_target(tmp_path):
    agent = make_agent(tmp_path)
    import dataclasses

    agent.node = dataclasses.replace(agent.node, target_factor=0.85)
    clock = Clock(agent)
    res = clock.run(2.0)
    total = sum(rates(res, 2.0).values())
    assert total == pytest.approx(0.85 * 20 * M, rel=0.06)  # A settles at the target, not the line rate
