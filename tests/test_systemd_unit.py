# SPDX-License-Identifier: Apache-2.0
"""deploy/systemd/ffs-agent@.service: systemd accepts it (systemd-analyze verify), and the command
line it starts, expanded as systemd expands it, runs the agent against a software switch, stops
cleanly on systemd's SIGTERM, and exits with the status the unit does not restart on exactly for
a bad option."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ffs.agent.api import ApiError, call
from ffs.cli.common import EXIT_USAGE
from ffs.cli.ctl import DEFAULT_SOCKET

ROOT = Path(__file__).resolve().parent.parent
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


def exec_start(node: str, env_text: str) -> tuple[list[str], dict[str, str]]:
    """ExecStart as systemd runs it for ffs-agent@NODE: %i is the node; the unit's Environment=
    first, the EnvironmentFile over it; ${VAR} is one word, $VAR alone is split on whitespace."""
    u = unit()
    env: dict[str, str] = {}
    for assignments in u["Environment"]:
        env.update(a.split("=", 1) for a in shlex.split(assignments))
    env.update(env_file(env_text))
    (cmd,) = u["ExecStart"]
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
    argv, env = exec_start("s1", ENV_EXAMPLE.read_text())
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
    from ffs.switch.control import SwitchControl
    from ffs.switch.pipeline import Pipeline
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
