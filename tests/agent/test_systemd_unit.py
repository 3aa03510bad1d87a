# SPDX-License-Identifier: Apache-2.0
"""deploy/systemd/ffs-agent@.service: systemd accepts it (systemd-analyze verify), rates its
exposure at 2.0 or less (systemd-analyze security), and the command lines it starts, expanded as
systemd expands them, check the configuration (ExecStartPre) and run the agent against a software
switch, as root and as the unit's own unprivileged user (DynamicUser=) with what systemd gives it
(its directories, $NOTIFY_SOCKET and a watchdog, no new privileges, no writable and executable
memory): READY once the socket answers, WATCHDOG pings, a clean stop on SIGTERM, and the status
the unit does not restart on exactly for a bad option.

systemd itself does not run here (no init system in CI): what it would do for the unit (the user,
the directories, the notification socket, MemoryDenyWriteExecute= through PR_SET_MDWE) is done by
`as_the_unit` below, and says so."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import ffs
from conftest import ROOT
from ffs.cli.common import EXIT_USAGE
from ffs.cli.ctl import DEFAULT_SOCKET
from ffs.core.api_client import ApiError, call

UNIT = ROOT / "deploy" / "systemd" / "ffs-agent@.service"
ENV_EXAMPLE = ROOT / "deploy" / "systemd" / "node.env.example"
DUMBBELL = ROOT / "topologies" / "dumbbell.yaml"
SYSTEM_UNITS = Path("/usr/lib/systemd/system")


def unit() -> dict[str, list[str]]:
    """key -> values (a key may repeat), over all sections; continuation lines joined."""
    out: dict[str, list[str]] = {}
    text = re.sub(r"\\\n", " ", UNIT.read_text())
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            k, v = line.split("=", 1)
            out.setdefault(k.strip(), []).append(v.strip())
    return out


def env_file(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line.strip() and not line.startswith("#"))


def exec_start(node: str, env_text: str, key: str = "ExecStart") -> tuple[list[str], dict[str, str]]:
    """ExecStart (or ExecStartPre) as systemd runs it for ffs-agent@NODE: %i is the node; the unit's
    Environment= first, the EnvironmentFile over it; ${VAR} is one word, $VAR alone is split on whitespace."""
    u = unit()
    env: dict[str, str] = {}
    for assignments in u["Environment"]:
        env.update(a.split("=", 1) for a in shlex.split(assignments))
    env.update(env_file(env_text))
    (cmd,) = u[key]
    argv = []
    for word in cmd.replace("%i", node).split():
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if m:
            argv += env.get(m.group(1), "").split()
        else:
            argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda x: env.get(x.group(1), ""), word))
    return argv, env


def test_what_the_unit_promises():
    u = unit()
    assert u["Restart"] == ["on-failure"] and u["RestartPreventExitStatus"] == [str(EXIT_USAGE)]
    assert u["StateDirectory"] == ["ffs"] and u["RuntimeDirectory"] == ["ffs"]
    assert u["ProtectSystem"] == ["strict"] and u["NoNewPrivileges"] == ["yes"]
    assert u["EnvironmentFile"] == ["/etc/ffs/%i.env"]
    # its own user and no capability; notified and watched
    assert u["DynamicUser"] == ["yes"] and u["CapabilityBoundingSet"] == [""] and "User" in u
    assert u["Type"] == ["notify"] and u["NotifyAccess"] == ["main"] and int(u["WatchdogSec"][0]) > 0
    assert u["SystemCallFilter"] == ["@system-service"] and u["MemoryDenyWriteExecute"] == ["yes"]
    assert u["ProtectProc"] == ["invisible"] and u["ProcSubset"] == ["pid"]
    assert u["IPAddressDeny"] == ["any"] and u["IPAddressAllow"] == ["localhost"]
    # the locks where every agent of the machine looks: the runtime directory
    assert dict(a.split("=", 1) for e in u["Environment"] for a in shlex.split(e))["FFS_RUN_DIR"] == "/run/ffs"
    # ExecStartPre checks exactly what ExecStart runs
    pre, _ = exec_start("s1", ENV_EXAMPLE.read_text(), "ExecStartPre")
    argv, env = exec_start("s1", ENV_EXAMPLE.read_text())
    assert pre == [argv[0], "--check", *argv[1:]]
    opts = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert opts["--node"] == "s1" and opts["--state-dir"] == "/var/lib/ffs/s1"  # under StateDirectory
    assert opts["--socket"] == DEFAULT_SOCKET  # where ffsctl looks without --socket
    assert opts["--topology"] == env["FFS_TOPOLOGY"] and opts["--target"] == "tofino"
    assert "SDE_INSTALL" in env  # the tofino target's bfrt_grpc


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None or not SYSTEM_UNITS.is_dir(),
    reason="no systemd-analyze or no system units here (Debian: apt-get install systemd)",
)
def test_systemd_analyze_verify_passes(tmp_path):
    # a root of its own: the system's units, the unit, and an executable where ExecStart points
    root = tmp_path / "root"
    shutil.copytree(SYSTEM_UNITS, root / SYSTEM_UNITS.relative_to("/"), symlinks=True)
    (root / "etc" / "systemd" / "system").mkdir(parents=True)
    shutil.copy(UNIT, root / "etc" / "systemd" / "system" / UNIT.name)
    exe = root / exec_start("s1", ENV_EXAMPLE.read_text())[0][0].lstrip("/")
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    r = subprocess.run(
        ["systemd-analyze", "verify", f"--root={root}", "ffs-agent@s1.service"], capture_output=True, text=True
    )
    # a value systemd cannot parse is only a warning: any output fails the unit too
    assert r.returncode == 0 and (r.stdout + r.stderr).strip() == "", r.stdout + r.stderr
    (root / "etc" / "systemd" / "system" / UNIT.name).write_text(
        UNIT.read_text().replace("ProtectSystem=strict", "ProtectSystem=nope")
    )
    r = subprocess.run(
        ["systemd-analyze", "verify", f"--root={root}", "ffs-agent@s1.service"], capture_output=True, text=True
    )
    assert "nope" in r.stdout + r.stderr  # the check sees a broken unit


def exposure(unit_text: str, tmp_path: Path) -> float:
    """systemd-analyze security's overall exposure of the unit (0 safest, 10 worst), read offline."""
    path = tmp_path / "ffs-agent@s1.service"
    path.write_text(unit_text)
    r = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", str(path)], capture_output=True, text=True, timeout=60
    )
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", r.stdout + r.stderr)
    if m is None and "offline" in r.stderr:
        pytest.skip(f"this systemd-analyze cannot rate a unit offline: {r.stderr.strip()[-200:]}")
    assert m, r.stdout + r.stderr
    return float(m.group(1))


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="no systemd-analyze (Debian: apt-get install systemd)"
)
def test_systemd_analyze_security_exposure_is_at_most_2(tmp_path):
    assert exposure(UNIT.read_text(), tmp_path) <= 2.0
    # the rating sees the hardening: root, capabilities and every system call are worse
    weaker = "\n".join(
        line
        for line in UNIT.read_text().splitlines()
        if not line.startswith(("DynamicUser=", "SystemCallFilter=", "CapabilityBoundingSet="))
    )
    assert exposure(weaker, tmp_path) > 2.0


def run_unit(tmp_path: Path, switch: str, ffs_args: str) -> tuple[subprocess.Popen, str]:
    """The unit's command line for node s1 with the software switch as target, /var/lib/ffs and
    /run/ffs moved under tmp_path, ffs-agent as this environment's."""
    env_text = (
        ENV_EXAMPLE.read_text()
        + f"FFS_TOPOLOGY={DUMBBELL}\nFFS_TARGET=model\nFFS_SWITCH={switch}\nFFS_ARGS={ffs_args}\n"
    )
    argv, _ = exec_start("s1", env_text)
    argv = [a.replace("/var/lib/ffs", str(tmp_path / "lib")).replace("/run/ffs", str(tmp_path / "run")) for a in argv]
    assert argv[0].endswith("/ffs-agent")
    (tmp_path / "run").mkdir(mode=0o755, exist_ok=True)
    (tmp_path / "lib").mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ, FFS_RUN_DIR=str(tmp_path / "run"))
    p = subprocess.Popen(
        [sys.executable, "-m", "ffs.cli.agent", *argv[1:]],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "agent.log", "a"),
    )
    return p, DEFAULT_SOCKET.replace("/run/ffs", str(tmp_path / "run"))


def test_the_units_command_runs_the_agent_and_stops_cleanly(tmp_path):
    from ffs.switch.pipeline import Pipeline
    from ffs.switch.runtime import SwitchControl
    from ffs.switch.server import serve

    switch = f"unix:{tmp_path}/switch.sock"
    server = serve(SwitchControl(Pipeline(1)), switch)
    agent = None
    try:
        agent, sock = run_unit(tmp_path, switch, "--period-ms 50 --lpf-time-constant-us 1000")
        end = time.monotonic() + 30
        while True:
            try:
                assert call(sock, {"op": "status"})["node"] == "s1"
                break
            except ApiError:
                assert agent.poll() is None and time.monotonic() < end, (tmp_path / "agent.log").read_text()[-2000:]
                time.sleep(0.1)
        assert (tmp_path / "lib" / "s1").stat().st_mode & 0o777 == 0o700  # the state, where StateDirectory= is
        agent.send_signal(signal.SIGTERM)  # systemctl stop
        assert agent.wait(timeout=30) == 0
        assert not os.path.exists(sock)
        # a bad option: the status the unit does not restart on; an unreachable switch: one it does
        bad, _ = run_unit(tmp_path, switch, "--period-ms -1")
        assert bad.wait(timeout=60) == EXIT_USAGE
        gone, _ = run_unit(tmp_path, f"unix:{tmp_path}/none.sock", "--connect-timeout 1")
        assert gone.wait(timeout=60) not in (0, EXIT_USAGE)
    finally:
        if agent is not None and agent.poll() is None:
            agent.kill()
            agent.wait()
        server.stop(0)


# --- the unit's own user ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


DYNAMIC_UID = 61184  # the first uid systemd hands a DynamicUser= unit
PR_SET_NO_NEW_PRIVS, PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 38, 65, 1
# what systemd does for the unit before it executes a command: no new privileges, and
# MemoryDenyWriteExecute= (the kernel's PR_SET_MDWE: no memory both writable and executable, inherited
# across exec); the user and groups are set by subprocess
UNIT_EXEC = (
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    f"for option, value in (({PR_SET_NO_NEW_PRIVS}, 1), ({PR_SET_MDWE}, {PR_MDWE_REFUSE_EXEC_GAIN})):\n"
    "    if libc.prctl(option, value, 0, 0, 0) != 0:\n"
    "        sys.exit(f'prctl({option}): {os.strerror(ctypes.get_errno())}')\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


def searchable_by_all(path: str) -> bool:
    """Every directory above `path` lets others through (pyenv's under root's 0700 home does not)."""
    p = Path(os.path.realpath(path))
    return all(d.stat().st_mode & 0o001 for d in p.parents)


def unit_python() -> str | None:
    """An interpreter the unit's user can run, its standard library included, as a switch's python3 is."""
    for exe in filter(None, ("/usr/bin/python3", shutil.which("python3"), sys.executable)):
        if not searchable_by_all(exe):
            continue
        r = subprocess.run([exe, "-c", "import sys, venv; print(sys.base_prefix)"], capture_output=True, text=True)
        if r.returncode == 0 and searchable_by_all(r.stdout.strip() + "/lib"):
            return exe
    return None


@pytest.fixture(scope="module")
def opt_ffs(request):
    """/opt/ffs as docs/hardware.md makes it: a virtual environment of a Python every user can run,
    with the wheel of the ordinary build (conftest.py's `wheel`), in a directory the unit's user can read."""
    if os.geteuid() != 0:
        pytest.skip("needs root (the unit's user is another uid)")
    exe = unit_python()
    if exe is None:
        pytest.skip("no Python here that a user other than root can run (docs/hardware.md uses the switch's python3)")
    whl = request.getfixturevalue("wheel")  # after the skips: no build for a test that cannot run
    base = Path(tempfile.mkdtemp(prefix="ffs-unit-", dir="/tmp"))
    try:
        base.chmod(0o755)
        subprocess.run([exe, "-m", "venv", str(base / "opt")], check=True, timeout=120)
        version = subprocess.run(
            [exe, "-c", "import sys; print('{}.{}'.format(*sys.version_info))"], capture_output=True, text=True
        ).stdout.strip()
        # this environment's pins where they apply (its Python's version); elsewhere what pip resolves
        pins = ["-c", str(ROOT / "constraints" / "dev.txt")] if version == "{}.{}".format(*sys.version_info) else []
        r = subprocess.run(
            [str(base / "opt" / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *pins, str(whl)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def unit_command(base: Path, key: str, switch: str) -> tuple[list[str], dict[str, str]]:
    """The unit's command for s1 and the environment systemd gives it, with /opt/ffs, /var/lib/ffs
    and /run/ffs under `base`."""
    # the topology where the unit's user can read it, as /etc/ffs is: a checkout may sit in a private directory
    topology = base / "dumbbell.yaml"
    shutil.copyfile(DUMBBELL, topology)
    topology.chmod(0o644)
    env_text = ENV_EXAMPLE.read_text() + f"FFS_TOPOLOGY={topology}\nFFS_TARGET=model\nFFS_SWITCH={switch}\n"
    env_text += "FFS_ARGS=--period-ms 50 --lpf-time-constant-us 1000\n"
    argv, unit_env = exec_start("s1", env_text, key)

    def moved(a: str) -> str:
        for old, new in (("/opt/ffs", "opt"), ("/var/lib/ffs", "lib"), ("/run/ffs", "run")):
            a = a.replace(old, str(base / new))
        return a

    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
        "LANG": "C.UTF-8",
        "HOME": "/",
        "USER": "ffs-agent",
        "LOGNAME": "ffs-agent",
        "STATE_DIRECTORY": str(base / "lib"),
        "RUNTIME_DIRECTORY": str(base / "run"),
        **{k: moved(v) for k, v in unit_env.items()},
    }
    return [moved(a) for a in argv], env


def as_the_unit(base: Path, argv: list[str], env: dict[str, str], **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [str(base / "opt" / "bin" / "python"), "-c", UNIT_EXEC, *argv],
        env=env,
        user=DYNAMIC_UID,
        group=DYNAMIC_UID,
        extra_groups=[],
        cwd="/",
        **kw,
    )


SO_TIMESTAMP = getattr(socket, "SO_TIMESTAMP", 29)  # Linux's value; Python does not export it


def notifications(sock: socket.socket, until: float, limit: int | None = None) -> list[tuple[float, str]]:
    """What arrives on `sock` until `until` (time.monotonic()), or its first `limit` messages, each
    with the time the kernel took it from the sender (SO_TIMESTAMP, seconds of the realtime clock):
    the agent's own timing, not this process's, whose switch server shares its interpreter."""
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMP, 1)
    out: list[tuple[float, str]] = []
    while (limit is None or len(out) < limit) and (left := until - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            msg, anc, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(16))
        except TimeoutError:
            break
        stamp = next((d for lvl, t, d in anc if (lvl, t) == (socket.SOL_SOCKET, SO_TIMESTAMP)), None)
        assert stamp is not None, "no SO_TIMESTAMP on the notification socket"
        sec, usec = struct.unpack("qq", stamp[:16])
        out.append((sec + usec / 1e6, msg.decode()))
    return out


def test_the_unit_runs_as_its_own_user_notified_and_watched(opt_ffs):
    from ffs.switch.pipeline import Pipeline
    from ffs.switch.runtime import SwitchControl
    from ffs.switch.server import serve

    base = opt_ffs
    for d, mode in (("lib", 0o700), ("run", 0o755)):  # StateDirectory= and RuntimeDirectory=, the user's
        shutil.rmtree(base / d, ignore_errors=True)
        (base / d).mkdir(mode=mode)
        os.chown(base / d, DYNAMIC_UID, DYNAMIC_UID)
    port = free_port()
    server = serve(SwitchControl(Pipeline(1)), f"127.0.0.1:{port}")  # bf_switchd's place: TCP on loopback
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(base / "notify"))
    (base / "notify").chmod(0o777)  # as systemd's own notification socket
    watchdog_s = 2.0
    agent = None
    try:
        pre_argv, env = unit_command(base, "ExecStartPre", f"127.0.0.1:{port}")
        pre = as_the_unit(base, pre_argv, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = pre.communicate(timeout=60)
        assert pre.returncode == 0 and out.startswith("ffs-agent: configuration of node s1 is usable"), out + err
        assert out.count("\n") == 1, out
        _check_group_handover(base, pre_argv, env)
        argv, env = unit_command(base, "ExecStart", f"127.0.0.1:{port}")
        env.update(NOTIFY_SOCKET=str(base / "notify"), WATCHDOG_USEC=str(int(watchdog_s * 1e6)))
        log = open(base / "agent.log", "w")
        agent = as_the_unit(base, argv, env, stdout=subprocess.DEVNULL, stderr=log)
        got = notifications(notify, time.monotonic() + 60, limit=1)
        assert got and "READY=1" in got[0][1].splitlines(), (base / "agent.log").read_text()[-2000:]
        sock = str(base / "run" / "agent.sock")
        status = call(sock, {"op": "status"})  # READY: the socket answers
        assert status["node"] == "s1" and status["agent_version"] == ffs.__version__
        assert status["program"] == f"ffs software switch {ffs.__version__}"
        proc = dict(line.split(":\t", 1) for line in Path(f"/proc/{agent.pid}/status").read_text().splitlines())
        assert proc["Uid"].split() == [str(DYNAMIC_UID)] * 4 and int(proc["CapEff"], 16) == 0, proc
        assert proc["NoNewPrivs"].strip() == "1"
        st = (base / "lib" / "s1").stat()
        assert (st.st_uid, st.st_mode & 0o777) == (DYNAMIC_UID, 0o700)
        st = os.stat(sock)
        assert (st.st_uid, st.st_mode & 0o777) == (DYNAMIC_UID, 0o600)
        # the tau loop pings the watchdog at its first period after a quarter of it: never more than
        # four times in it, typically every quarter to half of it, and never late enough for systemd to
        # kill it (a loaded machine may delay one period, so the last bound keeps a margin, not half)
        pings = [t for t, m in notifications(notify, time.monotonic() + 3 * watchdog_s) if m == "WATCHDOG=1"]
        pings = pings[1:]  # the first one may have waited in the socket while status was asked
        gaps = sorted(b - a for a, b in zip(pings, pings[1:], strict=False))
        assert len(pings) >= 5 and min(gaps) > watchdog_s / 4 * 0.8, gaps
        assert watchdog_s / 4 * 0.8 < gaps[len(gaps) // 2] < watchdog_s / 2 and max(gaps) < 0.75 * watchdog_s, gaps
        agent.send_signal(signal.SIGTERM)  # systemctl stop
        assert agent.wait(timeout=30) == 0, (base / "agent.log").read_text()[-2000:]
        assert "STOPPING=1" in "\n".join(m for _, m in notifications(notify, time.monotonic() + 1))
        assert sorted(os.listdir(base / "run")) == []  # socket and lock files removed
    finally:
        if agent is not None and agent.poll() is None:
            agent.kill()
            agent.wait()
        notify.close()
        server.stop(0)


def _check_group_handover(base: Path, pre_argv: list[str], env: dict[str, str]) -> None:
    """--group: the unit's user hands the socket to a group it is in (SupplementaryGroups=), with no
    capability; outside the group --check refuses in one line, exit 2 (not restarted)."""
    import grp

    try:
        group = grp.getgrgid(100).gr_name  # "users" on Debian
    except KeyError:
        return  # no group to try with on this machine
    argv = [*pre_argv, "--group", group]
    out = as_the_unit(base, argv, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = out.communicate(timeout=60)
    assert out.returncode == EXIT_USAGE and err.count("\n") == 1, err
    assert err.startswith(f"ffs-agent: error: --group {group}: ") and f"SupplementaryGroups={group}" in err, err
    member = subprocess.run(
        [str(base / "opt" / "bin" / "python"), "-c", UNIT_EXEC, *argv],
        env=env,
        user=DYNAMIC_UID,
        group=DYNAMIC_UID,
        extra_groups=[100],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert member.returncode == 0, member.stderr
