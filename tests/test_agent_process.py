# SPDX-License-Identifier: Apache-2.0
"""The agent as a process: kill -9 it after a matrix change and start it again; it restores the last
applied matrix into the switch (over the software switch's real gRPC service)."""

import os
import signal
import subprocess
import sys

import pytest

from agentkit import DUMBBELL, ffsctl, start_agent
from ffs import p4names, tables
from ffs.agent.api import call
from ffs.agent.program import LpfConfig
from ffs.switch.control import SwitchControl
from ffs.switch.driver import ModelDriver
from ffs.switch.pipeline import Pipeline
from ffs.switch.server import serve
from ffs.topology import load

pytestmark = pytest.mark.usefixtures("private_locks")


def pair_lm(driver) -> dict:
    return {
        (e.key["ingress_port"].value, e.key["egress_port"].value): tables.lm_of(e.params)
        for e in driver.read_table(p4names.PAIRS.name)
    }


def test_killed_agent_restores_the_applied_matrix(tmp_path):
    switch = f"unix:{tmp_path}/switch.sock"
    server = serve(SwitchControl(Pipeline(1)), switch)
    agent = None
    try:
        drv = ModelDriver(switch)
        drv.connect(timeout_s=10)
        agent = start_agent(tmp_path, switch)
        r = ffsctl(tmp_path / "agent.sock", "matrix", "set", "--ingress", "p1", "--egress", "p3", "--rate", "2Mbps")
        assert r.returncode == 0, r.stderr
        lpf = LpfConfig(1e6).for_node(load(DUMBBELL).node("s1"))  # as the agent sizes it with start_agent's 1 ms
        assert pair_lm(drv)[(1, 3)] == tables.lm_code(2e6, lpf.time_constant_ns, lpf.scale_down)
        os.kill(agent.pid, signal.SIGKILL)
        agent.wait(timeout=5)
        drv.clear_table(p4names.PAIRS.name)  # whatever happened to the switch meanwhile
        agent = start_agent(tmp_path, switch)
        assert pair_lm(drv)[(1, 3)] == tables.lm_code(
            2e6, lpf.time_constant_ns, lpf.scale_down
        )  # restored from the state dir, not the topology's 10 Mbps
        shown = call(tmp_path / "agent.sock", {"op": "matrix_show"})
        assert shown["fairness"]["p3"]["p1"] == pytest.approx(2e6)
        log = (tmp_path / "agent.log").read_text()
        assert "the last matrix applied wins over the topology's; --from-topology starts from the topology" in log
        # the operator starts fresh: the topology's 10 Mbps, and the start-up line says so
        agent.terminate()
        agent.wait(timeout=10)
        agent = start_agent(tmp_path, switch, "--from-topology")
        assert pair_lm(drv)[(1, 3)] == tables.lm_code(10e6, lpf.time_constant_ns, lpf.scale_down)
        assert call(tmp_path / "agent.sock", {"op": "matrix_show"})["fairness"]["p3"]["p1"] == pytest.approx(10e6)
        assert "--from-topology: the saved" in (tmp_path / "agent.log").read_text()
    finally:
        if agent is not None and agent.poll() is None:
            agent.terminate()
            agent.wait(timeout=5)
        server.stop(0)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_agent_process_metrics_logs_and_clean_stop(tmp_path):
    import urllib.request

    switch = f"unix:{tmp_path}/switch.sock"
    server = serve(SwitchControl(Pipeline(1)), switch)
    agent = None
    try:
        port = free_port()
        agent = start_agent(tmp_path, switch, f"--metrics-port={port}", "--log-format=json")
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert 'ffs_tau{egress="p3"}' in text and 'ffs_pair_rate_bps{egress="p3",ingress="p1"}' in text
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=10) == 0
        assert not (tmp_path / "agent.sock").exists()  # the socket is removed on the way out
        import json

        logs = [json.loads(x) for x in (tmp_path / "agent.log").read_text().splitlines()]
        assert any(r["msg"].startswith("took over node=s1 pairs=9") for r in logs)
        assert any(r["msg"].startswith("matrix loaded from ") and "(node s1)" in r["msg"] for r in logs)
        assert logs[-1]["msg"] == "agent stopped"
    finally:
        if agent is not None and agent.poll() is None:
            agent.kill()
            agent.wait(timeout=5)
        server.stop(0)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--node=s9"], "unknown node 's9'"),
        (["--node=s1", "--group=no-such-group-ffs"], "--group no-such-group-ffs: no such group"),
        (["--node=s1", "--switch=unix:/nonexistent/ffs.sock", "--connect-timeout=0.5"], "did not answer within 0.5 s"),
        (["--node=s1", "--target=tofino", "--connect-timeout=0.5"], "SDE_INSTALL"),
        (["--node=s1", "--max-decrease=1.5", "--switch=unix:/nonexistent/x"], "max_decrease must be in [0, 1)"),
        (["--node=s1", "--rpc-timeout=0", "--switch=unix:/nonexistent/x"], "--rpc-timeout"),
    ],
)
def test_agent_cli_errors_are_one_line(tmp_path, args, message):
    env = {k: v for k, v in os.environ.items() if k != "SDE_INSTALL"}
    p = subprocess.run(
        [sys.executable, "-m", "ffs.cli.agent", f"--topology={DUMBBELL}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert p.returncode in (1, 2)
    assert p.stderr.startswith("ffs-agent: error: ") and message in p.stderr and p.stderr.count("\n") == 1, p.stderr
