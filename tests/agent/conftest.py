# SPDX-License-Identifier: Apache-2.0
"""The agent, ffsctl and the drivers, against the software switch (in process or over its gRPC service)
or a fake of the SDE's client; the agent as a process, as a packaged wheel on other Pythons and as a
systemd unit. The tests that need root say so one by one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, mark_kind

# what takes long (a file, or file::function; -> why): make unit-tests leaves it out, make test runs it
SLOW: dict[str, str] = {
    "test_agent_crash.py": "kills a forked agent at every step, many times",
    "test_agent_ownership.py": "agents as processes, killed during changes",
    "test_agent_process.py": "the agent as a process: starts, kills and restarts it",
    "test_agent_pythons.py": "builds the wheel into a new environment of each Python",
    "test_agent_restart.py": "the same traffic with and without a restart",
    "test_agent_state_files.py": "an agent process per corrupt file",
    "test_bfrt_old_client.py": "generates the SDE's client with an old grpcio-tools on an old Python",
    "test_bfrt_scripts_py38.py": "runs the scripts under an old Python",
    "test_control_security.py": "every hostile input through the tools as processes",
    "test_ffsctl.py": "ffsctl as a process against an agent service",
    "test_ffsctl_fleet.py": "two agents and an sshd of its own",
    "test_systemd_unit.py": "installs the wheel's dependencies and runs the unit's commands as another user",
    "test_agent_core.py::test_invalid_matrix_changes_nothing": "every invalid matrix against a full state dump",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_kind(items, __file__, SLOW)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ordinary build, as an operator makes it (no option, no variable): the pure wheel, built
    once for the tests that install it (test_agent_pythons.py, test_systemd_unit.py)."""
    out = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k != "FFS_BUILD_FASTPATH"}
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("ffs_tofino-*.whl")
    assert whl.name.endswith("-py38-none-any.whl"), whl.name  # installs on every Python from 3.8 on
    return whl
