# SPDX-License-Identifier: Apache-2.0
"""The agent as a process: kill -9 it after a matrix change and start it again; it restores the last
applied matrix into the switch (over the software switch's real gRPC service)."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from agentkit import DUMBBELL, ffsctl, start_agent
from ffs.core import p4names, tables
from ffs.core.api_client import call
from ffs.core.program import LpfConfig
from ffs.core.topology import load
from ffs.switch.driver import ModelDriver
from ffs.switch.pipeline import Pipeline
from ffs.switch.runtime import SwitchControl
from ffs.switch.server import serve

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
        (["--node=s1", "--selftest-iface=eth0", "--switch=unix:/nonexistent/x"], "go together"),
        (["--node=s1", "--selftest-iface=eth0", "--selftest-port=p9", "--switch=unix:/x"], "no interface 'p9'"),
    ],
)
def test_agent_cli_errors_are_one_line(tmp_path, args, message):
    env = {k: v for k, v in os.environ.items() if k != "SDE_INSTALL"}
    sock = tmp_path / "ctl" / "agent.sock"
    p = subprocess.run(
        [sys.executable, "-m", "ffs.cli.agent", f"--topology={DUMBBELL}", f"--socket={sock}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert p.returncode in (1, 2)
    assert p.stderr.startswith("ffs-agent: error: ") and message in p.stderr and p.stderr.count("\n") == 1, p.stderr
    # nothing stale after a refusal: the switch's and the socket's lock files go with it (the next
    # start would otherwise report an owner that did not stop cleanly)
    left = [str(f) for d in (tmp_path / "run", sock.parent) if d.exists() for f in d.iterdir()]
    assert left == [], left


def test_version_check_and_build_info(tmp_path):
    import importlib.metadata
    import platform
    import urllib.request

    import ffs

    assert importlib.metadata.version("ffs-tofino") == ffs.__version__  # one version: pyproject reads ffs's
    want = f"{ffs.__version__} (Python {platform.python_version()})"
    for cmd, mod in (("ffs-agent", "ffs.cli.agent"), ("ffsctl", "ffs.cli.ctl")):
        r = subprocess.run([sys.executable, "-m", mod, "--version"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and r.stdout == f"{cmd} {want}\n", r.stdout + r.stderr
    # --check: one line, and the switch is not needed
    state = tmp_path / "state"
    args = [f"--topology={DUMBBELL}", "--node=s1", f"--state-dir={state}", "--switch=unix:/nonexistent/x", "--check"]
    r = subprocess.run([sys.executable, "-m", "ffs.cli.agent", *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("ffs-agent: configuration of node s1 is usable"), r.stderr
    assert r.stdout.count("\n") == 1 and r.stderr == ""
    saved = state / "matrix-s1.json"  # a saved matrix the topology no longer has a port for: refused
    saved.write_text('{"node": "s1", "fairness": {"p3": {"p9": 1000000}}}')
    before = sorted(os.listdir(state))
    r = subprocess.run([sys.executable, "-m", "ffs.cli.agent", *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and r.stderr.startswith("ffs-agent: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "no longer fits the topology" in r.stderr and sorted(os.listdir(state)) == before
    saved.unlink()
    # what runs: in status and in the metrics
    switch = f"unix:{tmp_path}/switch.sock"
    server = serve(SwitchControl(Pipeline(1)), switch)
    agent = None
    try:
        port = free_port()
        agent = start_agent(tmp_path, switch, f"--metrics-port={port}")
        s = call(tmp_path / "agent.sock", {"op": "status"})
        program = f"ffs software switch {ffs.__version__}"
        assert (s["agent_version"], s["python"], s["program"]) == (ffs.__version__, platform.python_version(), program)
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        labels = f'program="{program}",python="{platform.python_version()}",version="{ffs.__version__}"'
        line = f"ffs_build_info{{{labels}}} 1.0"
        assert line in text.splitlines(), [x for x in text.splitlines() if "build" in x]
        shown = ffsctl(tmp_path / "agent.sock", "status")
        assert f"node s1: agent {ffs.__version__} (Python {platform.python_version()}), program {program}" in (
            shown.stdout.replace("\n", " ")
        ), shown.stdout
    finally:
        if agent is not None and agent.poll() is None:
            agent.terminate()
            agent.wait(timeout=10)
        server.stop(0)


class HangingControl(SwitchControl):
    """A switch whose counter reads hang while `hang` is set: the agent's loop stops in a switch call."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.hang = threading.Event()
        self.release = threading.Event()

    def read_counters(self, *a, **kw):
        if self.hang.is_set():
            self.release.wait(20)
        return super().read_counters(*a, **kw)


def test_the_watchdog_is_fed_by_the_tau_loop_and_starves_when_it_hangs(tmp_path):
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify"))
    watchdog_s = 1.0

    def pings(seconds: float) -> list[float]:
        out, until = [], time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0:
            notify.settimeout(left)
            try:
                msg = notify.recv(4096).decode()
            except TimeoutError:
                break
            out += [time.monotonic()] if msg == "WATCHDOG=1" else []
        return out

    ctl = HangingControl(Pipeline(1))
    switch = f"unix:{tmp_path}/switch.sock"
    server = serve(ctl, switch)
    agent = None
    env = dict(os.environ, NOTIFY_SOCKET=str(tmp_path / "notify"), WATCHDOG_USEC=str(int(watchdog_s * 1e6)))
    try:
        agent = start_agent(tmp_path, switch, env=env)
        assert len(pings(2 * watchdog_s)) >= 4  # a quarter of the interval apart at most... and at least
        ctl.hang.set()
        time.sleep(0.3)  # the step in flight reaches the hanging read
        assert pings(3 * watchdog_s) == []  # systemd would kill it after one interval
        ctl.release.set()
        ctl.hang.clear()
        assert len(pings(2 * watchdog_s)) >= 3  # fed again once the loop moves
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=10) == 0
    finally:
        ctl.release.set()
        if agent is not None and agent.poll() is None:
            agent.kill()
            agent.wait(timeout=5)
        notify.close()
        server.stop(0)


def test_notifications_follow_sd_notify_conventions():
    from ffs.agent.notify import Notifier

    name = f"ffs-test-notify-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind("\0" + name)  # an abstract address, which $NOTIFY_SOCKET spells with '@'
        s.settimeout(5)
        n = Notifier({"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": str(os.getpid())})
        n.ready("node s1: 3 egresses")
        assert s.recv(4096) == b"READY=1\nSTATUS=node s1: 3 egresses"
        n.watchdog()
        n.watchdog()  # within a quarter of the interval: not sent again
        n.stopping()
        assert [s.recv(4096), s.recv(4096)] == [b"WATCHDOG=1", b"STOPPING=1\nSTATUS=stopping"]
        # a watchdog meant for another process (WATCHDOG_PID), or none at all, is not fed
        other = Notifier({"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"})
        assert other.watchdog_s == 0 and Notifier({"WATCHDOG_USEC": "1000000"}).watchdog_s == 0
        other.watchdog()
        with pytest.raises(TimeoutError):
            s.settimeout(0.2)
            s.recv(4096)
    Notifier({}).ready("nothing listens")  # outside systemd: nothing, no error
    Notifier({"NOTIFY_SOCKET": "/nonexistent/notify"}).ready("gone")  # a failure is logged, never raised
