# SPDX-License-Identifier: Apache-2.0
"""ffsctl against a running agent service: changes reach the data plane, errors are one line with
a non-zero exit, and the socket refuses a client without permission."""

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from agentkit import LPF, Clock, dump, ffsctl, make_agent
from ffs.agent.api import ControlServer
from ffs.agent.service import AgentService, ServiceConfig
from ffs.core import p4names, tables
from ffs.core.api_client import ApiError, call

requires_root = pytest.mark.root(reason="running a client as another uid (os.setuid in a child) needs root")

M = 1e6


@pytest.fixture
def running(tmp_path):
    agent = make_agent(tmp_path / "state")
    svc = AgentService(agent, ServiceConfig(socket=str(tmp_path / "agent.sock")))
    server = ControlServer(tmp_path / "agent.sock", svc.handle)
    server.start()
    yield agent, svc, tmp_path / "agent.sock"
    server.stop()


def test_matrix_set_changes_what_the_data_plane_drops(running):
    agent, svc, sock = running
    clock = Clock(agent)
    before = clock.run(1.0, svc.lock)
    assert before.rate_bps("well-behaved", 0.5, 1.0) == pytest.approx(8 * M, rel=0.05)
    p = ffsctl(sock, "matrix", "set", "--ingress", "p1", "--egress", "p3", "--rate", "3Mbps")
    assert p.returncode == 0, p.stderr
    assert "M(p1,p3): 10 Mbps -> 3 Mbps" in p.stdout
    lm = {
        (e.key["ingress_port"].value, e.key["egress_port"].value): tables.lm_of(e.params)
        for e in agent.driver.read_table(p4names.PAIRS.name)
    }
    assert lm[(1, 3)] == tables.lm_code(3 * M, LPF.time_constant_ns, LPF.scale_down)
    after = clock.run(1.5, svc.lock)
    # p1 is now constrained at its 3 Mbps share; the flood takes the rest of the 13 Mbps target
    assert after.rate_bps("well-behaved", 0.75, 1.5) == pytest.approx(3 * M, rel=0.1)
    assert after.rate_bps("flood", 0.75, 1.5) == pytest.approx(10 * M, rel=0.1)
    shown = json.loads(ffsctl(sock, "--json", "matrix", "show").stdout)
    assert shown["fairness"]["p3"]["p1"] == 3 * M
    log = json.loads(ffsctl(sock, "--json", "log").stdout)
    assert log[-1]["who"] == pwd.getpwuid(os.geteuid()).pw_name  # the peer's user, from SO_PEERCRED
    assert log[-1]["changes"] == [{"ingress": "p1", "egress": "p3", "old": 10 * M, "new": 3 * M}]
    status = json.loads(ffsctl(sock, "--json", "status").stdout)
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
        ("- p3\n- p1", "expected a mapping egress -> ingress -> rate"),
        ("q7: {p1: 1Mbps}", "unknown egress interface 'q7'"),
        ("p3: {p1: 0, p2: 0}", "sum to 0"),
    ],
)
def test_invalid_matrix_file_rejected_whole(running, tmp_path, content, fragment):
    agent, _, sock = running
    before = dump(agent.driver)
    f = tmp_path / "m.yaml"
    f.write_text(content + "\n")
    p = ffsctl(sock, "matrix", "load", str(f))
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and fragment in p.stderr and "Traceback" not in p.stderr
    assert dump(agent.driver) == before


def test_plan_and_diff(running, tmp_path):
    agent, svc, sock = running
    Clock(agent).run(1.0, svc.lock)
    f = tmp_path / "m.yaml"
    f.write_text("fairness:\n  p3: {p1: 4Mbps, p2: 16Mbps}\n  p1: {p3: 20Mbps}\n  p2: {p3: 20Mbps}\n")
    d = ffsctl(sock, "matrix", "diff", str(f))
    assert "M(p1,p3): 10 Mbps -> 4 Mbps" in d.stdout and "M(p2,p3): 10 Mbps -> 16 Mbps" in d.stdout
    plan = json.loads(ffsctl(sock, "--json", "matrix", "plan", str(f)).stdout)
    pred = {p["pair"]: p["rate"] for p in plan["pairs"]}
    assert pred["p1->p3"] == pytest.approx(4 * M, rel=0.05)  # exact FFS: 4 and 16 under the new shares
    assert pred["p2->p3"] == pytest.approx(16 * M, rel=0.05)
    assert agent.fairness["p3"]["p1"] == 10 * M  # planning changes nothing
    load = ffsctl(sock, "--json", "matrix", "load", str(f))
    assert load.returncode == 0, load.stderr
    assert {(c["ingress"], c["egress"], c["new"]) for c in json.loads(load.stdout)["changes"]} == {
        ("p1", "p3", 4 * M),
        ("p2", "p3", 16 * M),
    }
    assert agent.fairness == {"p3": {"p1": 4 * M, "p2": 16 * M}, "p1": {"p3": 20 * M}, "p2": {"p3": 20 * M}}
    saved = json.loads((tmp_path / "state" / "matrix-s1.json").read_text())
    assert (
        saved["fairness"] == agent.fairness
        and oct((tmp_path / "state" / "matrix-s1.json").stat().st_mode & 0o777) == "0o600"
    )
    assert "no change" in ffsctl(sock, "matrix", "diff", str(f)).stdout
    lines = ffsctl(sock, "log").stdout.splitlines()
    assert len(lines) == 2 and all("M(p" in x and "-> " in x for x in lines)


def test_log_marks_an_aborted_change(running):
    """A change the switch refused (or a crash left unfinished) is shown as aborted, with why."""
    agent, _, sock = running
    rec = agent.store.record("mallory", "matrix", [{"ingress": "p1", "egress": "p3", "old": 10 * M, "new": 1 * M}])
    agent.store.begin(rec)
    agent.store.settle(rec["id"], "abort", "the switch refused it")
    assert ffsctl(sock, "matrix", "set", "--ingress", "p1", "--egress", "p3", "--rate", "3Mbps").returncode == 0
    lines = ffsctl(sock, "log").stdout.splitlines()
    assert len(lines) == 2 and lines[0].endswith("[aborted: the switch refused it]") and "mallory" in lines[0]
    assert not lines[1].endswith("]") and "-> 3" in lines[1]
    assert [r["status"] for r in json.loads(ffsctl(sock, "--json", "log").stdout)] == ["aborted", "committed"]


def test_unreachable_agent_is_one_line(tmp_path):
    p = ffsctl(tmp_path / "none.sock", "status")
    assert p.returncode == 1 and "no agent socket" in p.stderr and p.stderr.count("\n") == 1


def test_socket_is_owner_only(running):
    _, _, sock = running
    assert oct(os.stat(sock).st_mode & 0o777) == "0o600"
    assert call(sock, {"op": "tau_show"}) is not None
    with pytest.raises(ApiError, match="unknown op"):
        call(sock, {"op": "reboot"})


def as_user(sock, uid=65534, gid=65534, groups=()) -> str:
    """Call the agent from a forked child running as another user; returns what happened."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        out = "crashed"
        try:
            os.setgroups(list(groups))
            os.setgid(gid)
            os.setuid(uid)
            call(sock, {"op": "status"})
            out = "answered"
        except ApiError as e:
            out = "refused by agent" if "permission denied for" in str(e) else f"refused: {e}"
        except BaseException as e:  # noqa: BLE001 - report anything to the parent
            out = f"error: {e}"
        finally:
            os.write(w, out.encode())
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        got = f.read()
    os.waitpid(pid, 0)
    return got


@pytest.fixture
def open_dir():
    """A directory every user can traverse (pytest's own tmp dirs are 0700 for root), so only the
    socket's mode and the agent's SO_PEERCRED check stand between another user and the agent."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="ffs-sock-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def serve(agent, path, group=None):
    server = ControlServer(path, AgentService(agent, ServiceConfig()).handle, group=group)
    server.start()
    return server


@requires_root
def test_socket_refuses_other_users(tmp_path, open_dir):
    server = serve(make_agent(tmp_path), open_dir / "agent.sock")
    try:
        assert as_user(open_dir / "agent.sock").startswith("refused: permission denied on")  # the file mode: 0600
        os.chmod(open_dir / "agent.sock", 0o666)  # an operator mistake: SO_PEERCRED still refuses
        assert as_user(open_dir / "agent.sock") == "refused by agent"
        assert call(open_dir / "agent.sock", {"op": "tau_show"}) is not None  # root still gets in
    finally:
        server.stop()


@requires_root
def test_group_socket_admits_members_only(tmp_path, open_dir):
    import grp

    group = grp.getgrgid(1).gr_name  # a system group the test user "nobody" is not in
    sock = open_dir / "g.sock"
    server = serve(make_agent(tmp_path), sock, group)
    try:
        st = os.stat(sock)
        assert oct(st.st_mode & 0o777) == "0o660" and st.st_gid == 1
        assert as_user(sock, groups=[1]) == "answered"  # a supplementary member (SO_PEERGROUPS)
        assert as_user(sock, gid=1) == "answered"  # a primary member
        assert as_user(sock).startswith("refused: permission denied on")
        os.chmod(sock, 0o666)
        assert as_user(sock) == "refused by agent"
    finally:
        server.stop()


def test_malformed_requests_get_one_line_errors(running):
    _, _, sock = running
    with pytest.raises(ApiError, match="matrix_set: missing 'rate'"):
        call(sock, {"op": "matrix_set", "ingress": "p1", "egress": "p3"})
    with pytest.raises(ApiError, match="a request is a JSON object"):
        call(sock, {"no": "op"})
    with pytest.raises(ApiError, match="limit must be an integer"):
        call(sock, {"op": "log", "limit": "many"})


def test_bad_rate_and_env_socket(running, monkeypatch):
    agent, _, sock = running
    before = dump(agent.driver)
    env = {**os.environ, "FFS_AGENT_SOCKET": str(sock)}
    p = subprocess.run(
        [sys.executable, "-m", "ffs.cli.ctl", "matrix", "set", "--ingress", "p1", "--egress", "p3", "--rate", "lots"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert (
        p.returncode == 1 and p.stderr.startswith("ffsctl: error: M(p1,p3): not a rate") and p.stderr.count("\n") == 1
    )
    assert dump(agent.driver) == before
    p = subprocess.run(
        [sys.executable, "-m", "ffs.cli.ctl", "matrix", "set", "--ingress", "p1", "--egress", "p3", "--rate", "40Mbps"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert p.returncode == 1 and "above its capacity" in p.stderr and dump(agent.driver) == before


def test_human_output(running):
    agent, svc, sock = running
    Clock(agent).run(0.5, svc.lock)
    st = ffsctl(sock, "status")
    assert st.returncode == 0 and "node s1: egresses" in st.stdout and "p3" in st.stdout
    egress_table = st.stdout.split("pairs")[0]
    rows = {ln.split("│")[1].strip(): ln for ln in egress_table.splitlines() if ln.startswith("│ p")}
    tau = ffsctl(sock, "tau", "show")
    # one display everywhere: the value the metrics and --json carry, and the state beside it
    p1 = next(e for e in agent.snapshot.egresses if e.egress == "p1")
    assert tau.returncode == 0 and f"p1: {p1.tau:.4f} (uncongested)" in tau.stdout
    p3 = next(e for e in agent.snapshot.egresses if e.egress == "p3")
    assert p3.congested and f"p3: {p3.tau:.4f}\n" in tau.stdout
    j = json.loads(ffsctl(sock, "tau", "show", "--json").stdout)  # --json after the subcommand too
    assert {e["egress"]: (e["tau"], e["state"]) for e in j}["p1"] == (p1.tau, "uncongested")
    assert {e["egress"]: e["tau_display"] for e in j}["p3"] == f"{p3.tau:.4f}"
    assert (
        f"{p3.tau:.4f}" in rows["p3"]
        and " congested │" in rows["p3"]
        and f"{p1.tau:.4f}" in rows["p1"]
        and "uncongested" in rows["p1"]
    )
    show = ffsctl(sock, "matrix", "show")
    assert show.returncode == 0 and "10 Mbps" in show.stdout


def test_metrics_on_loopback(running):
    import socket
    import urllib.request

    from ffs.agent.metrics import Metrics

    agent, svc, _ = running
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = Metrics(port)
    try:
        assert m.server.server_address[0] == "127.0.0.1"
        Clock(agent).run(0.5, svc.lock)
        m.update(agent.snapshot)
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        p3 = next(e for e in agent.snapshot.egresses if e.egress == "p3")
        assert f'ffs_tau{{egress="p3"}} {p3.tau}' in text
        drops = sum(p.drops for p in agent.snapshot.pairs if p.ingress == "p2" and p.egress == "p3")
        assert drops > 0 and f'ffs_pair_drops_total{{egress="p3",ingress="p2"}} {float(drops)}' in text
        assert 'ffs_pair_share_bps{egress="p3",ingress="p1"} 1e+07' in text
    finally:
        m.close()


def test_plan_says_why_it_is_empty(running, tmp_path):
    agent, svc, sock = running
    f = tmp_path / "m.yaml"
    f.write_text("p3: {p1: 4Mbps, p2: 16Mbps}\n")
    before = ffsctl(sock, "matrix", "plan", str(f))  # no period measured yet
    assert before.returncode == 0 and "nothing to predict: no measurement yet" in before.stdout, before.stdout
    agent.step(0.0)
    agent.step(0.1)  # measured: no traffic anywhere
    idle = json.loads(ffsctl(sock, "matrix", "plan", str(f), "--json").stdout)
    assert idle["pairs"] == [] and "carries traffic" in idle["why_empty"]
    assert idle["egresses"] == [] or all(e["state"] == "uncongested" for e in idle["egresses"])
