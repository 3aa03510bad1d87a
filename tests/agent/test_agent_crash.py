# SPDX-License-Identifier: Apache-2.0
"""Crash consistency of a matrix change (docs/control-plane.md, "The audit's guarantee"): the agent
is killed (SIGKILL, in a forked copy of it) at every step of `apply_matrix`, 100 times per step;
after the next start the audit log explains the state file exactly, holds every change the switch
or the state file ever held, and no temporary file is left."""

from __future__ import annotations

import logging
import os
import signal

import pytest

from agentkit import DUMBBELL, LPF, make_agent
from ffs.agent.core import Agent
from ffs.agent.state import StateStore
from ffs.core.topology import load

M = 1e6
RUNS = 100
# the steps of apply_matrix, in order (StateStore.reached)
POINTS = ["logged", "staged", "switched", "renamed", "committed"]
SWITCH_HELD = {"switched", "renamed", "committed"}  # the switch had the new batch when the agent died
FILE_HELD = {"renamed", "committed"}  # the state file had it


def _crash_at(agent: Agent, point: str, fairness: dict, who: str) -> None:
    """Apply `fairness` in a child process that SIGKILLs itself on reaching `point`."""
    pid = os.fork()
    if pid == 0:  # the child: no cleanup, no atexit, as under kill -9
        try:

            def hook(p: str) -> None:
                if p == point:
                    os.kill(os.getpid(), signal.SIGKILL)

            agent.store.crash_hook = hook
            agent.apply_matrix(fairness, who=who)
        finally:
            os._exit(3)  # not killed: the point was never reached
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"{point} not reached"


def _replay(records: list[dict]) -> dict:
    """The topology's matrix with every committed change applied in order."""
    fairness = {e: dict(col) for e, col in load(DUMBBELL).node("s1").fairness.items()}
    for rec in records:
        if rec["status"] != "committed":
            continue
        for c in rec["changes"]:
            col = fairness.setdefault(c["egress"], {})
            if c["new"] is None:
                col.pop(c["ingress"], None)
            else:
                col[c["ingress"]] = c["new"]
    return {e: col for e, col in fairness.items() if col}


def _restart(agent: Agent, state) -> Agent:
    return Agent(agent.driver, load(DUMBBELL), "s1", lpf=LPF, store=StateStore(state))


@pytest.mark.parametrize("point", POINTS)
def test_kill_at_every_step_leaves_audit_and_state_consistent(tmp_path, point, caplog):
    agent = make_agent(tmp_path)
    agent.apply_matrix({**agent.fairness, "p3": {**agent.fairness["p3"], "p1": 9 * M}}, who="first")
    consistent = 0
    for run in range(RUNS):
        old = agent.fairness["p3"]["p1"]
        rate = (1 + run % 9) * M if (1 + run % 9) * M != old else 9.5 * M
        who = f"run{run}"
        _crash_at(agent, point, {**agent.fairness, "p3": {**agent.fairness["p3"], "p1": rate}}, who)
        stray = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="ffs.agent"):
            agent = _restart(agent, tmp_path)  # start-up settles the half-done change
        lines = [r.getMessage() for r in caplog.records]

        records = agent.store.read_audit()
        saved = agent.store._read_matrix_file("s1")
        [rec] = [r for r in records if r["who"] == who]  # audited before the switch or the file saw it
        assert rec["changes"] == [{"ingress": "p1", "egress": "p3", "old": old, "new": rate}]
        assert rec["status"] == ("committed" if point in FILE_HELD else "aborted")
        assert all(r["status"] in ("committed", "aborted") for r in records)  # nothing left pending
        assert saved["fairness"] == _replay(records) == agent.fairness  # the log explains the file
        assert saved["change"]["id"] == [r for r in records if r["status"] == "committed"][-1]["id"]
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        assert sum("removed temporary files" in m for m in lines) == (1 if stray else 0)
        assert sum(rec["id"] in m for m in lines) == (0 if point == "committed" else 1)  # settled once, said once
        consistent += 1
    assert consistent == RUNS


def test_torn_write_ahead_record_changes_nothing(tmp_path):
    """Killed in the middle of appending the record: the torn line is skipped, and nothing else
    had happened yet."""
    agent = make_agent(tmp_path)
    fairness = dict(agent.fairness)
    _crash_at(agent, "logged", {**fairness, "p3": {**fairness["p3"], "p1": 4 * M}}, "torn")
    with open(agent.store.audit_path, "r+b") as f:
        f.truncate(os.path.getsize(agent.store.audit_path) - 20)
    again = _restart(agent, tmp_path)
    assert again.fairness == fairness and again.store.read_audit() == []
    assert not (tmp_path / "matrix-s1.json").exists()


def test_refused_change_is_aborted_in_the_log_and_the_next_one_commits(tmp_path):
    from ffs.driver.base import DriverError

    agent = make_agent(tmp_path)
    real = agent.driver.write

    def refuse(ups):
        raise DriverError("refused")

    agent.driver.write = refuse
    with pytest.raises(DriverError):
        agent.apply_matrix({**agent.fairness, "p3": {**agent.fairness["p3"], "p1": 3 * M}}, who="a")
    agent.driver.write = real
    agent.apply_matrix({**agent.fairness, "p3": {**agent.fairness["p3"], "p1": 4 * M}}, who="b")
    assert [(r["who"], r["status"]) for r in agent.store.read_audit()] == [("a", "aborted"), ("b", "committed")]
    assert _restart(agent, tmp_path).store.recover("s1") == []  # nothing to settle
