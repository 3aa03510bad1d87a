# SPDX-License-Identifier: Apache-2.0
"""ffsctl over SSH and across a fleet: two agents on this machine (nodes s1 and s2, each with its own
software switch), reached as `ffsctl --host ssh://...` reaches an agent on a switch.

The transport runs twice: through a real sshd on a loopback port with keys made here (root, an
installed sshd), and through a stand-in `ssh` that runs the remote command on this machine, which
is what ssh does once it has authenticated. Either way the far end is `ffsctl dial-stdio`, the
agent's own socket checks apply, and no listener is added."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ffs
from ffs.core import p4names
from ffs.core.api_client import ApiError, call
from ffs.switch.pipeline import Pipeline
from ffs.switch.runtime import SwitchControl
from ffs.switch.server import serve
from ffs.switch.tna import ControlError

FFSCTL = str(Path(sys.executable).parent / "ffsctl")  # the remote ffsctl: this environment's
NODE = """    interfaces:
      p1: {capacity: 20Mbps, port: 1}
      p2: {capacity: 20Mbps, port: 2}
      p3: {capacity: 20Mbps, port: 3}
    fairness:
      p3: {p1: 10Mbps, p2: 10Mbps}
    routes:
      - {prefix: 10.0.3.0/24, interface: p3}
"""
TOPOLOGY = "name: fleet\nnodes:\n  s1:\n" + NODE + "  s2:\n" + NODE
NEW = "p3: {p1: 12Mbps, p2: 8Mbps}\n"

pytestmark = pytest.mark.usefixtures("private_locks")


class RefusingControl(SwitchControl):
    """A switch that refuses writes to the pairs table while `refuse` is set (a matrix push fails
    there after its plan succeeded)."""

    refuse = False

    def write(self, updates):
        if self.refuse and any(u.entry.table == p4names.PAIRS.name for u in updates):
            raise ControlError("pairs table is read-only now (the test's refusal)")
        return super().write(updates)


def agent_argv(version: str | None) -> list[str]:
    """ffs-agent of this environment; with `version`, one that says it is that version (an agent
    of another release, as in a fleet half upgraded)."""
    if version is None:
        return [sys.executable, "-m", "ffs.cli.agent"]
    run = f"import sys, ffs; ffs.__version__ = {version!r}; sys.argv[0] = 'ffs-agent'; "
    run += "import ffs.cli.agent as a; a.main()"
    return [sys.executable, "-c", run]


@pytest.fixture
def two_agents(tmp_path, request):
    topo = tmp_path / "fleet-topology.yaml"
    topo.write_text(TOPOLOGY)
    versions = getattr(request, "param", {})
    servers, agents, nodes = [], [], {}
    try:
        for node in ("s1", "s2"):
            ctl = RefusingControl(Pipeline(1))
            switch = f"unix:{tmp_path}/{node}-switch.sock"
            servers.append(serve(ctl, switch))
            sock = tmp_path / f"{node}.sock"
            agents.append(
                subprocess.Popen(
                    [
                        *agent_argv(versions.get(node)),
                        f"--topology={topo}",
                        f"--node={node}",
                        f"--switch={switch}",
                        f"--socket={sock}",
                        f"--state-dir={tmp_path}/state-{node}",
                        "--period-ms=50",
                        "--lpf-time-constant-us=1000",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=open(tmp_path / f"{node}.log", "w"),
                )
            )
            nodes[node] = {"socket": str(sock), "control": ctl}
        end = time.monotonic() + 30
        for node, a in zip(nodes, agents, strict=False):
            while True:
                try:
                    call(nodes[node]["socket"], {"op": "status"})
                    break
                except ApiError:
                    assert a.poll() is None and time.monotonic() < end, (tmp_path / f"{node}.log").read_text()[-1500:]
                    time.sleep(0.1)
        yield nodes
    finally:
        for a in agents:
            a.terminate()
            a.wait(timeout=10)
        for s in servers:
            s.stop(0)


def fake_ssh(tmp_path: Path) -> dict[str, str]:
    """An `ssh` that checks its arguments as ssh takes them and runs the remote command here."""
    script = tmp_path / "fake-ssh"
    script.write_text(f"""#!{sys.executable}
import os, shlex, sys
args = sys.argv[1:]
seen = []
while args[0] != "--":
    opt = args.pop(0)
    assert opt in ("-o", "-p"), opt
    seen.append((opt, args.pop(0)))
args.pop(0)
dest, command = args
open({str(tmp_path / "ssh.log")!r}, "a").write(repr((dest, seen)) + "\\n")
argv = shlex.split(command)  # one command, as ssh's remote shell runs it
os.execvp(argv[0], argv)
""")
    script.chmod(0o755)
    return {"FFS_SSH_COMMAND": str(script)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def sshd(tmp_path, request):
    """sshd on a loopback port, for root with a key made here; the ssh command that uses it. Its
    sessions see /usr/local/bin as the switch has it after docs/hardware.md's install (a private
    mount namespace: ffsctl linked there from the environment that holds it, or, with the parameter
    False, not): the login PATH, not an absolute path, finds the remote ffsctl."""
    exe = shutil.which("sshd") or ("/usr/sbin/sshd" if os.access("/usr/sbin/sshd", os.X_OK) else None)
    if exe is None or os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root, unshare and sshd (Debian: apt-get install openssh-server)")
    linked = getattr(request, "param", True)
    d = tmp_path / "ssh"
    d.mkdir(mode=0o700)
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
    (d / "authorized_keys").write_text((d / "user_key.pub").read_text())
    port = free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\nPidFile {d / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nStrictModes no\nUsePAM no\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
    )
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    setup = 'mount -t tmpfs -o mode=0755 tmpfs /usr/local/bin && { [ -z "$1" ] || ln -s "$1" /usr/local/bin/ffsctl; }'
    proc = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", setup + ' && shift && exec "$@"', "sh"]
        + [FFSCTL if linked else "", exe, "-D", "-e", "-f", str(d / "sshd_config")],
        stderr=open(d / "sshd.log", "w"),
    )
    try:
        end = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < end, (d / "sshd.log").read_text()
                time.sleep(0.1)
        cmd = (
            f"ssh -F /dev/null -i {d / 'user_key'} -o UserKnownHostsFile={d / 'known_hosts'} "
            "-o StrictHostKeyChecking=accept-new"
        )
        yield {"FFS_SSH_COMMAND": cmd, "url": f"ssh://root@127.0.0.1:{port}"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def ffsctl(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("FFS_AGENT")}
    e.update(env)
    return subprocess.run(
        [sys.executable, "-m", "ffs.cli.ctl", *args], capture_output=True, text=True, env=e, timeout=timeout
    )


def fleet_file(
    tmp_path: Path,
    url: str,
    nodes: dict,
    matrices: dict[str, str],
    order=("s1", "s2"),
    name="fleet.yaml",
    claim: dict[str, str] | None = None,
    remote_ffsctl: str | None = FFSCTL,
) -> Path:
    lines = ["switches:"]
    for node in order:
        matrix = f"{Path(name).stem}-{node}.yaml"  # relative to the fleet file
        (tmp_path / matrix).write_text(matrices[node])
        named = f"ffsctl: '{remote_ffsctl}', " if remote_ffsctl else ""
        lines.append(
            f"  - {{node: {(claim or {}).get(node, node)}, host: '{url}', socket: '{nodes[node]['socket']}', "
            f"{named}matrix: {matrix}}}"
        )
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def shares(nodes, node) -> dict:
    return call(nodes[node]["socket"], {"op": "matrix_show"})["fairness"]["p3"]


def run_fleet_cases(tmp_path: Path, nodes: dict, url: str, env: dict[str, str], remote_ffsctl: str | None) -> None:
    """The cases over one transport; `remote_ffsctl` None: the far end finds ffsctl on its PATH."""
    fleet_file_ = functools.partial(fleet_file, remote_ffsctl=remote_ffsctl)
    # one agent, as --host
    named = {"FFS_REMOTE_FFSCTL": remote_ffsctl} if remote_ffsctl else {}
    r = ffsctl("--host", url, "--socket", nodes["s2"]["socket"], "--json", "status", env={**env, **named})
    assert r.returncode == 0 and json.loads(r.stdout)["node"] == "s2", r.stderr
    # plan: every node asked, nothing changed; what each runs, the same everywhere
    f = fleet_file_(tmp_path, url, nodes, {"s1": NEW, "s2": NEW})
    r = ffsctl("fleet", "plan", str(f), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "s1 (" in r.stdout and "s2 (" in r.stdout and "M(p1,p3): 10 Mbps -> 12 Mbps" in r.stdout, r.stdout
    runs = f"agent {ffs.__version__}, program ffs software switch {ffs.__version__}: 2 changes"
    assert f"s1 ({url}): {runs}" in r.stdout and f"s2 ({url}): {runs}" in r.stdout, r.stdout
    assert "warning" not in r.stdout
    assert shares(nodes, "s1")["p1"] == 10e6 and shares(nodes, "s2")["p1"] == 10e6
    # a matrix an agent refuses in the plan: nothing is pushed anywhere
    bad = fleet_file_(tmp_path, url, nodes, {"s1": NEW, "s2": "p3: {p9: 1Mbps}\n"}, name="bad.yaml")
    r = ffsctl("fleet", "apply", str(bad), env=env)
    assert r.returncode == 1 and "nothing was pushed" in r.stderr and "p9" in r.stdout, r.stdout + r.stderr
    assert shares(nodes, "s1")["p1"] == 10e6
    # the agent at an address is another node than the file says: refused in the plan
    wrong = fleet_file_(tmp_path, url, nodes, {"s1": NEW, "s2": NEW}, name="wrong.yaml", claim={"s2": "s9"})
    r = ffsctl("fleet", "apply", str(wrong), env=env)
    assert r.returncode == 1 and "is node s2, not s9" in r.stdout, r.stdout + r.stderr
    # s2's switch refuses the push after its plan: s1 keeps its new matrix, and the run says so
    nodes["s2"]["control"].refuse = True
    r = ffsctl("fleet", "apply", str(f), env=env)
    nodes["s2"]["control"].refuse = False
    assert r.returncode == 1, r.stdout + r.stderr
    assert "s1 (" in r.stdout and "changed (2 entries)" in r.stdout and "s2 (" in r.stdout and "refused" in r.stdout, (
        r.stdout
    )
    assert "changed: s1; refused: s2" in r.stdout
    assert (
        r.stderr.strip()
        == "ffsctl: error: fleet apply stopped at s2: pairs table is read-only now (the test's refusal); "
        "changed before it: s1"
        or ("stopped at s2" in r.stderr and "changed before it: s1" in r.stderr)
    ), r.stderr
    assert shares(nodes, "s1")["p1"] == 12e6 and shares(nodes, "s2")["p1"] == 10e6
    # again, refused first: the node after it is not pushed
    first = fleet_file_(
        tmp_path, url, nodes, {"s1": "p3: {p1: 14Mbps, p2: 6Mbps}\n", "s2": NEW}, order=("s2", "s1"), name="first.yaml"
    )
    nodes["s2"]["control"].refuse = True
    r = ffsctl("--json", "fleet", "apply", str(first), env=env)
    nodes["s2"]["control"].refuse = False
    assert r.returncode == 1
    states = {sw["node"]: sw["state"] for sw in json.loads(r.stdout)["switches"]}
    assert states == {"s2": "refused", "s1": "not pushed"}
    assert shares(nodes, "s1")["p1"] == 12e6
    # the whole fleet: s1 is already at its matrix (unchanged), s2 changes
    r = ffsctl("fleet", "apply", str(f), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "changed: s2; unchanged: s1", r.stdout
    assert shares(nodes, "s2")["p1"] == 12e6


def test_fleet_over_the_ssh_transport(two_agents, tmp_path):
    env = fake_ssh(tmp_path)
    run_fleet_cases(tmp_path, two_agents, "ssh://ops@switch-a:2222", env, FFSCTL)
    dest, opts = eval((tmp_path / "ssh.log").read_text().splitlines()[0])
    assert dest == "ops@switch-a" and ("-p", "2222") in opts and ("-o", "BatchMode=yes") in opts


def test_fleet_over_real_ssh_to_localhost(two_agents, sshd, tmp_path):
    # as docs/hardware.md sets a switch up: ffsctl on the login PATH, the fleet file names no path
    run_fleet_cases(tmp_path, two_agents, sshd["url"], {"FFS_SSH_COMMAND": sshd["FFS_SSH_COMMAND"]}, None)


@pytest.mark.parametrize("sshd", [False], indirect=True)
def test_a_switch_without_ffsctl_on_its_path_is_one_line(two_agents, sshd):
    r = ffsctl("--host", sshd["url"], "--socket", two_agents["s1"]["socket"], "status", env=sshd)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"ffsctl: error: {sshd['url']}: ffsctl is not on the PATH of an SSH session there ("), (
        r.stderr
    )
    assert "command not found" in r.stderr and "/usr/local/bin" in r.stderr


@pytest.mark.parametrize("two_agents", [{"s2": "0.0.9"}], indirect=True)
def test_fleet_plan_warns_where_the_nodes_run_different_versions(two_agents, tmp_path):
    f = fleet_file(tmp_path, "ssh://ops@switch", two_agents, {"s1": NEW, "s2": NEW})
    r = ffsctl("fleet", "plan", str(f), env=fake_ssh(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "s2 (ssh://ops@switch): agent 0.0.9, program" in r.stdout, r.stdout
    assert f"warning: the nodes run different agent versions: {ffs.__version__} (s1); 0.0.9 (s2)" in r.stdout
    assert "different programs" not in r.stdout  # the switches run the same one
    r = ffsctl("--json", "fleet", "plan", str(f), env=fake_ssh(tmp_path))
    report = json.loads(r.stdout)
    assert [sw["agent_version"] for sw in report["switches"]] == [ffs.__version__, "0.0.9"]
    assert report["warnings"] == [f"the nodes run different agent versions: {ffs.__version__} (s1); 0.0.9 (s2)"]


def test_fleet_differences_name_programs_too():
    from ffs.cli.fleet import Switch, differences

    fleet = [Switch("s1", Path("m"), agent_version="1", program="ffs p4src aaa"), Switch("s2", Path("m"))]
    fleet.append(Switch("s3", Path("m"), agent_version="1", program="ffs p4src bbb"))
    assert differences(fleet) == ["the nodes run different programs: ffs p4src aaa (s1); ffs p4src bbb (s3)"]


def test_unreachable_host_and_bad_urls_are_one_line(tmp_path):
    r = ffsctl("--host", "ssh://nobody@127.0.0.1:1", "status", env={"FFS_SSH_COMMAND": "ssh -F /dev/null"}, timeout=60)
    assert (
        r.returncode == 1
        and r.stderr.count("\n") == 1
        and r.stderr.startswith("ffsctl: error: ssh://nobody@127.0.0.1:1: ")
    ), r.stderr
    r = ffsctl("--host", "http://switch", "status", env={})
    assert r.returncode == 1 and "use ssh://[user@]host[:port]" in r.stderr, r.stderr


def test_dial_stdio_relays_requests_and_answers(two_agents):
    p = subprocess.run(
        [sys.executable, "-m", "ffs.cli.ctl", "dial-stdio", "--socket", two_agents["s1"]["socket"]],
        input=b'{"op": "matrix_show"}\n{"op": "tau_show"}\n',
        capture_output=True,
        timeout=30,
    )
    answers = [json.loads(line) for line in p.stdout.splitlines()]
    assert p.returncode == 0 and [a["ok"] for a in answers] == [True, True] and answers[0]["result"]["node"] == "s1"


def test_a_killed_session_does_not_hang(two_agents, tmp_path):
    from ffs.cli.remote import Remote

    env = fake_ssh(tmp_path)
    os.environ["FFS_SSH_COMMAND"] = env["FFS_SSH_COMMAND"]
    try:
        r = Remote("ssh://switch-b", two_agents["s1"]["socket"], FFSCTL, timeout_s=10)
        assert r.call({"op": "matrix_show"})["node"] == "s1"
        r.proc.send_signal(signal.SIGKILL)
        with pytest.raises(ApiError, match="ssh://switch-b: "):
            r.call({"op": "matrix_show"})
        r.close()
    finally:
        del os.environ["FFS_SSH_COMMAND"]
