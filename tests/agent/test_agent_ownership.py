# SPDX-License-Identifier: Apache-2.0
"""One agent owns a switch; the agent repairs what others change behind its back; reads of the
control API never wait for the switch; the state directory and audit log resist crashes and
careless permissions (docs/control-plane.md)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from agentkit import DUMBBELL, ffsctl, start_agent
from ffs.agent.owner import OwnerError, OwnerLock
from ffs.agent.state import StateError, StateStore
from ffs.core import p4names
from ffs.core.api_client import call
from ffs.switch.pipeline import Pipeline
from ffs.switch.runtime import SwitchControl
from ffs.switch.server import serve

pytestmark = pytest.mark.usefixtures("private_locks")


class HangingControl(SwitchControl):
    """A switch whose counter reads block while `hang` is set (a wedged switch daemon)."""

    def __init__(self, pipeline: Pipeline) -> None:
        super().__init__(pipeline)
        self.hang = threading.Event()
        self.release = threading.Event()

    def read_counters(self, name, indices=None):
        if self.hang.is_set():
            self.release.wait(20)
        return super().read_counters(name, indices)


@pytest.fixture
def switch(tmp_path):
    ctl = HangingControl(Pipeline(1))
    address = f"unix:{tmp_path}/switch.sock"
    server = serve(ctl, address)
    yield ctl, address
    ctl.release.set()
    server.stop(0)


def _stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.terminate()
        p.wait(10)


def test_second_agent_is_refused_and_the_first_keeps_working(tmp_path, switch):
    ctl, address = switch
    first = start_agent(tmp_path, address)
    try:
        before = ctl.read_table(p4names.PAIRS.name)
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "ffs.cli.agent",
                f"--topology={DUMBBELL}",
                "--node=s1",
                f"--switch={address}",
                f"--socket={tmp_path}/other.sock",
                f"--state-dir={tmp_path}/state2",
                "--connect-timeout=2",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode == 1
        err = second.stderr
        assert (
            err.startswith("ffs-agent: error: the switch at ") and f"pid {first.pid}" in err and err.count("\n") == 1
        ), err
        # the same socket, another switch: refused for the socket, which is left alone
        third = subprocess.run(
            [
                sys.executable,
                "-m",
                "ffs.cli.agent",
                f"--topology={DUMBBELL}",
                "--node=s1",
                f"--switch=unix:{tmp_path}/nowhere.sock",
                f"--socket={tmp_path}/agent.sock",
                f"--state-dir={tmp_path}/state3",
                "--connect-timeout=2",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert third.returncode == 1 and "the control socket" in third.stderr and f"pid {first.pid}" in third.stderr, (
            third.stderr
        )
        assert (tmp_path / "agent.sock").exists() and not (tmp_path / "other.sock").exists()
        assert call(tmp_path / "agent.sock", {"op": "status"})["node"] == "s1"
        r = ffsctl(tmp_path / "agent.sock", "matrix", "set", "--ingress", "p1", "--egress", "p3", "--rate", "4Mbps")
        assert r.returncode == 0, r.stderr
        assert ctl.read_table(p4names.PAIRS.name) != before  # the first agent still writes the switch
    finally:
        _stop(first)
    # once the owner is gone (however it went), the next agent takes over
    again = start_agent(tmp_path, address)
    _stop(again)


def test_out_of_band_clear_is_repaired_on_the_check_period(tmp_path, switch):
    ctl, address = switch
    agent = start_agent(tmp_path, address, "--check-period-s=0.5")
    try:
        want = ctl.read_table(p4names.PAIRS.name)
        assert want
        ctl.clear_table(p4names.PAIRS.name)  # a local user's clear_table('pairs') over the control service
        end = time.monotonic() + 5
        while time.monotonic() < end and ctl.read_table(p4names.PAIRS.name) != want:
            time.sleep(0.1)
        assert ctl.read_table(p4names.PAIRS.name) == want
    finally:
        _stop(agent)
    log = (tmp_path / "agent.log").read_text()
    assert "reconciled (check)" in log and f"pairs:insert={len(want)}" in log


def test_status_answers_while_the_switch_hangs(tmp_path, switch):
    ctl, address = switch
    agent = start_agent(tmp_path, address)
    try:
        ctl.hang.set()
        time.sleep(0.3)  # the τ loop is now stuck in a counter read
        for op in ("status", "tau_show", "matrix_show", "log"):
            t0 = time.monotonic()
            call(tmp_path / "agent.sock", {"op": op})
            assert time.monotonic() - t0 < 1.0, op
        ctl.release.set()
    finally:
        _stop(agent)


def test_state_dir_refused_when_others_can_write_it(tmp_path):
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    os.chmod(d, 0o775)
    with pytest.raises(StateError, match="writable by group or others"):
        StateStore(d)
    os.chmod(d, 0o700)
    if os.geteuid() == 0:
        os.chown(d, 12345, -1)
        with pytest.raises(StateError, match="owned by uid 12345"):
            StateStore(d)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ffs.cli.agent",
            f"--topology={DUMBBELL}",
            "--node=s1",
            f"--state-dir={d}",
            f"--switch=unix:{tmp_path}/none.sock",
            "--connect-timeout=1",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and str(d) in r.stderr, r.stderr


def test_empty_fairness_in_state_file_refused(tmp_path):
    store = StateStore(tmp_path)
    store.matrix_path("s1").write_text(json.dumps({"node": "s1", "fairness": {}}))
    with pytest.raises(StateError, match="empty or missing fairness"):
        store.load_matrix("s1")


def test_torn_audit_line_is_skipped_and_isolated(tmp_path):
    store = StateStore(tmp_path)
    store.audit("alice", "matrix", [{"ingress": "p1", "egress": "p3", "old": 1e7, "new": 2e6}])
    with open(store.audit_path, "a") as f:
        f.write('{"time": 1, "who": "bob", "cha')  # a crash mid-append
    store.audit("carol", "matrix", [])
    assert [r["who"] for r in store.read_audit()] == ["alice", "carol"]


def test_change_committed_before_its_audit_append_is_audited_on_recovery(tmp_path):
    store = StateStore(tmp_path)
    rec = store.record("dave", "matrix", [{"ingress": "p1", "egress": "p3", "old": 1e7, "new": 3e6}], uid=1000)
    staged = store.stage_matrix("s1", {"p3": {"p1": 3e6}}, rec)
    os.replace(staged, store.matrix_path("s1"))  # killed after the rename, before the append
    assert store.read_audit() == []
    assert len(StateStore(tmp_path).recover("s1")) == 1
    assert store.read_audit() == [{**rec, "status": "committed"}]
    assert StateStore(tmp_path).recover("s1") == []  # never twice


def test_kill_9_during_matrix_changes_never_leaves_one_unaudited(tmp_path, switch):
    """kill -9 at varying moments while `matrix set` runs: whatever the agent had committed is in
    the audit log once the next agent has started (the record is committed with the matrix)."""
    import random

    ctl, address = switch
    rng = random.Random(7)
    state = tmp_path / "state"
    for k in range(8):
        agent = start_agent(tmp_path, address)
        rate = f"{2 + k % 6}Mbps"
        client = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ffs.cli.ctl",
                f"--socket={tmp_path}/agent.sock",
                "matrix",
                "set",
                "--ingress",
                "p1",
                "--egress",
                "p3",
                "--rate",
                rate,
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "ctl.log", "a"),
        )
        if k == 0:  # one change surely committed; the others killed at random moments
            assert client.wait(30) == 0
        time.sleep(rng.uniform(0.05, 0.4))
        agent.kill()
        agent.wait(10)
        client.wait(10)
    agent = start_agent(tmp_path, address)  # recovers the record of the last committed change
    try:
        saved = json.loads((state / "matrix-s1.json").read_text())
        audited = [r["id"] for r in StateStore(state).read_audit()]
        assert saved["change"] is not None and saved["change"]["id"] in audited
        assert len(audited) == len(set(audited))  # never audited twice
        assert call(tmp_path / "agent.sock", {"op": "matrix_show"})["fairness"] == saved["fairness"]
    finally:
        _stop(agent)


def test_owner_lock_files_go_with_a_clean_stop_and_a_late_opener_starts_over(tmp_path):
    """A clean release removes the lock file while holding it; an agent that opened the old file just
    before finds, once it holds the lock, that the path names another file, and locks that one, so
    two agents never both own the switch."""
    path = tmp_path / "switch-x.lock"
    first = OwnerLock()
    first.acquire(path, "the switch")
    late = os.open(path, os.O_RDWR)  # a second agent that opened the file just before the release
    first.close()
    assert not path.exists()
    fcntl.flock(late, fcntl.LOCK_EX | fcntl.LOCK_NB)  # it gets the lock of the removed file...
    second, third = OwnerLock(), OwnerLock()
    second.acquire(path, "the switch")  # ...but the owner is who locks the file at the path
    with pytest.raises(OwnerError, match="owned by another ffs-agent"):
        third.acquire(path, "the switch")
    assert path.read_text() == f"{os.getpid()}\n" and not second.taken_over
    second.close()
    os.close(late)
