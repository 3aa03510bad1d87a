# SPDX-License-Identifier: Apache-2.0
"""Saved state that cannot be trusted stops ffs-agent with one line, never a traceback: a corrupt
matrix file (however deep, large or odd) and a file that names another node; --adopt-state-of takes
over another node's files on purpose. Stale sockets after kill -9 are taken over and said so."""

from __future__ import annotations

import json
import logging
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agentkit import DUMBBELL, start_agent
from ffs.agent.state import StateError, StateStore
from ffs.core.api_client import call
from ffs.switch.pipeline import Pipeline
from ffs.switch.runtime import SwitchControl
from ffs.switch.server import serve

GOOD = {"node": "s1", "fairness": {"p3": {"p1": 2e6, "p2": 10e6}}, "saved_at": 0, "change": None}

pytestmark = pytest.mark.usefixtures("private_locks")


@pytest.fixture
def switch(tmp_path):
    address = f"unix:{tmp_path}/switch.sock"
    server = serve(SwitchControl(Pipeline(1)), address)
    yield address
    server.stop(0)


def _agent(tmp_path: Path, address: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ffs.cli.agent",
            f"--topology={DUMBBELL}",
            "--node=s1",
            f"--switch={address}",
            f"--state-dir={tmp_path}/state",
            "--connect-timeout=10",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _state(tmp_path: Path, content: bytes) -> Path:
    d = tmp_path / "state"
    d.mkdir(mode=0o700, exist_ok=True)
    (d / "matrix-s1.json").write_bytes(content)
    return d


CORRUPT = {
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "deep-object": b'{"node": "s1", "fairness": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "truncated": json.dumps(GOOD).encode()[:30],
    "binary": b"\xff\xfe\x00garbage",
    "nan": json.dumps({**GOOD, "fairness": {"p3": {"p1": float("nan")}}}).encode(),
    "huge": b'{"node": "s1", "pad": "' + b"x" * (5 << 20) + b'"}',
    "array": b"[1, 2]",
    "empty": b"",
    "no-node": json.dumps({k: v for k, v in GOOD.items() if k != "node"}).encode(),
}


@pytest.mark.parametrize("kind", sorted(CORRUPT))
def test_corrupt_saved_matrix_is_one_line(tmp_path, switch, kind):
    path = _state(tmp_path, CORRUPT[kind]) / "matrix-s1.json"
    with pytest.raises(StateError):
        StateStore(path.parent).load_matrix("s1")
    r = _agent(tmp_path, switch)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("ffs-agent: error: ") and r.stderr.count("\n") == 1 and str(path) in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "RecursionError" not in r.stderr


def test_deep_tau_program_and_audit_lines_are_ignored(tmp_path):
    """The τ and program files only speed a start up, and a torn audit line is skipped: a deep one
    in any of them costs nothing but itself."""
    store = StateStore(tmp_path)
    deep = "[" * 100_000 + "]" * 100_000
    store.tau_path("s1").write_text(deep)
    store.program_path("s1").write_text(deep)
    store.audit("alice", "matrix", [])
    with open(store.audit_path, "a") as f:
        f.write(deep + "\n")
    store.audit("bob", "matrix", [])
    assert store.load_taus("s1") == {} and store.load_program("s1") is None
    assert [r["who"] for r in store.read_audit()] == ["alice", "bob"]


def test_foreign_saved_matrix_is_refused_naming_both_nodes(tmp_path, switch):
    path = _state(tmp_path, json.dumps({**GOOD, "node": "s9"}).encode()) / "matrix-s1.json"
    r = _agent(tmp_path, switch)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert str(path) in r.stderr and "node s9's, not node s1's" in r.stderr and "--adopt-state-of=s9" in r.stderr
    # another node's τ and program files are not this node's either
    store = StateStore(path.parent)
    store.tau_path("s1").write_text(json.dumps({"node": "s9", "taus": {"p3": {"tau": 2.0, "congested": True}}}))
    store.program_path("s1").write_text(json.dumps({"node": "s9", "program_id": "x"}))
    assert store.load_taus("s1") == {} and store.load_program("s1") is None
    assert StateStore(path.parent, adopt="s9").load_taus("s1")["p3"].tau == 2.0


def test_adopt_state_of_takes_the_foreign_matrix_over(tmp_path, switch):
    _state(tmp_path, json.dumps({**GOOD, "node": "s9"}).encode())
    r = _agent(tmp_path, switch, "--adopt-state-of=s7")  # a different node is still refused
    assert r.returncode == 1 and "node s9's" in r.stderr, r.stderr
    agent = start_agent(tmp_path, switch, "--adopt-state-of=s9")
    try:
        assert call(tmp_path / "agent.sock", {"op": "matrix_show"})["fairness"]["p3"]["p1"] == 2e6
        log = (tmp_path / "agent.log").read_text()
        assert log.count("taking over node s9's saved matrix as node s1's") == 1
    finally:
        agent.terminate()
        agent.wait(10)


def test_help_documents_adopt_state_of():
    r = subprocess.run([sys.executable, "-m", "ffs.cli.agent", "--help"], capture_output=True, text=True, timeout=30)
    assert "--adopt-state-of OTHER" in r.stdout


def test_after_kill_9_the_next_agent_takes_over_socket_and_locks_in_one_line_each(tmp_path, switch):
    """kill -9 leaves the agent's socket file and its pid in the owner lock files; the next agent
    replaces the socket and takes the locks over, one log line each. After a clean stop: neither."""
    agent = start_agent(tmp_path, switch)
    agent.send_signal(signal.SIGKILL)
    agent.wait(10)
    assert (tmp_path / "agent.sock").exists()  # what the kill left
    log = tmp_path / "agent.log"
    log.write_text("")
    agent = start_agent(tmp_path, switch)
    try:
        assert call(tmp_path / "agent.sock", {"op": "status"})["node"] == "s1"
        lines = log.read_text().splitlines()
        assert sum("removed the stale socket" in x and str(tmp_path / "agent.sock") in x for x in lines) == 1, lines
        took = [x for x in lines if "took over the lock files" in x]
        assert len(took) == 1 and "agent.sock.lock" in took[0] and "switch-" in took[0], lines
    finally:
        agent.terminate()
        assert agent.wait(10) == 0
    # a clean stop removes the socket and the lock files
    assert not (tmp_path / "agent.sock").exists() and not (tmp_path / "agent.sock.lock").exists()
    assert not list((tmp_path / "run").glob("*.lock"))
    log.write_text("")
    agent = start_agent(tmp_path, switch)  # after a clean stop there is nothing to take over
    try:
        text = log.read_text()
        assert "stale" not in text and "took over the lock files" not in text, text
    finally:
        agent.terminate()
        agent.wait(10)


def test_software_switch_takes_over_its_stale_socket_and_ready_file(tmp_path, caplog):
    from ffs.switch.live import run_live

    sock = tmp_path / "switch.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(sock))
    s.close()  # bound, never served: as kill -9 of `ffs-switch run` leaves it
    ready = tmp_path / "ready"
    ready.write_text("4242\n")
    with caplog.at_level(logging.WARNING):
        server = serve(SwitchControl(Pipeline(1)), f"unix:{sock}")
        server.stop(0)
        with pytest.raises(OSError):  # no such interface: it stops, but only after the stale file is gone
            run_live({1: "ffs-no-such-if"}, f"unix:{tmp_path}/other.sock", ready_file=str(ready))
    msgs = [r.getMessage() for r in caplog.records]
    assert sum("removed the stale socket" in m and str(sock) in m for m in msgs) == 1, msgs
    assert sum("stale ready file" in m and "pid 4242" in m for m in msgs) == 1, msgs
    assert not ready.exists()
