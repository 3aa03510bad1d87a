"""ffsctl against a running agent service: changes reach the data plane, errors are one line with
a non-zero exit, and the socket refuses a client without permission."""

import json
import os
import pwd
import subprocess
import sys

import pytest

from ffs import p4names as N
from ffs import tables as T
from ffs.agent.api import ApiError, ControlServer, call
from ffs.agent.service import AgentService, ServiceConfig
from agentkit import LPF, Clock, dump, make_agent
from conftest import requires_root

M = 1e6


@pytest.fixture
def running(tmp_path):
    agent = make_agent(tmp_path / "state")
    svc = AgentService(agent, ServiceConfig(socket=str(tmp_path / "agent.sock")))
    server = ControlServer(tmp_path / "agent.sock", svc.handle)
    server.start()
    yield agent, svc, tmp_path / "agent.sock"
    server.stop()


def ctl(sock, *args):
    return subprocess.run([sys.executable, "-m", "ffs.cli.ctl", "--socket", str(sock), *args], capture_output=True, text=True)


def test_matrix_set_changes_what_the_data_plane_drops(running):
    agent, svc, sock = running
    clock = Clock(agent)
    before = clock.run(1.0, svc.lock)
    assert before.rate_bps("well-behaved", 0.5, 1.0) == pytest.approx(8 * M, rel=0.05)
    p = ctl(sock, "matrix", "set", "--ingress", "p1", "--egress", "p3", "--rate", "3Mbps")
    assert p.returncode == 0, p.stderr
    assert "M(p1,p3): 10 Mbps -> 3 Mbps" in p.stdout
    lm = {(e.key["ingress_port"].value, e.key["egress_port"].value): e.params["lm"] for e in agent.driver.read_table(N.PAIRS.name)}
    assert lm[(1, 3)] == T.lm_code(3 * M, LPF.time_constant_ns, LPF.scale_down)
    after = clock.run(1.5, svc.lock)
    # p1 is now constrained at its 3 Mbps share; the flood takes the rest of the 13 Mbps target
    assert after.rate_bps("well-behaved", 0.75, 1.5) == pytest.approx(3 * M, rel=0.1)
    assert after.rate_bps("flood", 0.75, 1.5) == pytest.approx(10 * M, rel=0.1)
    shown = json.loads(ctl(sock, "--json", "matrix", "show").stdout)
    assert shown["fairness"]["p3"]["p1"] == 3 * M
    log = json.loads(ctl(sock, "--json", "log").stdout)
    assert log[-1]["who"] == pwd.getpwuid(os.geteuid()).pw_name  # the peer's user, from SO_PEERCRED
    assert log[-1]["changes"] == [{"ingress": "p1", "egress": "p3", "old": 10 * M, "new": 3 * M}]
    status = json.loads(ctl(sock, "--json", "status").stdout)
    p3 = next(e for e in status["egresses"] if e["egress"] == "p3")
    assert p3["congested"] and p3["tau"] >= 1.0


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("p3: {p9: 1Mbps}", "unknown ingress interface 'p9'"),
        ("p3: {p1: -4Mbps}", "negative rate"),
        ("p3: {p1: .nan}", "not a finite rate"),
        ("p3: {p1: 15Mbps, p2: 15Mbps}", "above its capacity"),
        ("p3: {p1: [", "invalid YAML"),
    ],
)
def test_invalid_matrix_file_rejected_whole(running, tmp_path, content, fragment):
    agent, _, sock = running
    before = dump(agent.driver)
    f = tmp_path / "m.yaml"
    f.write_text(content + "\n")
    p = ctl(sock, "matrix", "load", str(f))
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and fragment in p.stderr and "Traceback" not in p.stderr
    assert dump(agent.driver) == before


def test_plan_and_diff(running, tmp_path):
    agent, svc, sock = running
    Clock(agent).run(1.0, svc.lock)
    f = tmp_path / "m.yaml"
    f.write_text("fairness:\n  p3: {p1: 4Mbps, p2: 16Mbps}\n  p1: {p3: 20Mbps}\n  p2: {p3: 20Mbps}\n")
    d = ctl(sock, "matrix", "diff", str(f))
    assert "M(p1,p3): 10 Mbps -> 4 Mbps" in d.stdout and "M(p2,p3): 10 Mbps -> 16 Mbps" in d.stdout
    plan = json.loads(ctl(sock, "--json", "matrix", "plan", str(f)).stdout)
    pred = {p["pair"]: p["rate"] for p in plan["pairs"]}
    assert pred["p1->p3"] == pytest.approx(4 * M, rel=0.05)  # exact FFS: 4 and 16 under the new shares
    assert pred["p2->p3"] == pytest.approx(16 * M, rel=0.05)
    assert agent.fairness["p3"]["p1"] == 10 * M  # planning changes nothing


def test_unreachable_agent_is_one_line(tmp_path):
    p = ctl(tmp_path / "none.sock", "status")
    assert p.returncode == 1 and "no agent socket" in p.stderr and p.stderr.count("\n") == 1


def test_socket_is_owner_only(running):
    _, _, sock = running
    assert oct(os.stat(sock).st_mode & 0o777) == "0o600"
    assert call(sock, {"op": "tau_show"}) is not None
    with pytest.raises(ApiError, match="unknown op"):
        call(sock, {"op": "reboot"})


@requires_root
def test_socket_refuses_other_users(running):
    _, _, sock = running
    pid = os.fork()
    if pid == 0:  # child: become nobody and try to talk to the agent
        code = 3
        try:
            os.setgid(65534)
            os.setuid(65534)
            call(sock, {"op": "status"})
            code = 0  # the agent answered: a failure
        except ApiError as e:
            code = 1 if "permission denied" in str(e) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 1


@requires_root
def test_peer_check_holds_even_if_mode_is_opened(running):
    _, _, sock = running
    os.chmod(sock, 0o666)  # an operator mistake: SO_PEERCRED still refuses
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            os.setgid(65534)
            os.setuid(65534)
            call(sock, {"op": "status"})
            code = 0
        except ApiError as e:
            code = 1 if "permission denied" in str(e) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 1
