# SPDX-License-Identifier: Apache-2.0
"""What every kind of test shares: the checkout's paths, fixtures, the `root` marker's skip; each kind's
folder has a conftest.py of its own that marks its tests (docs/testing.md, "Tests by kind")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGIES = ROOT / "topologies"


@pytest.fixture
def topo_dir() -> Path:
    return TOPOLOGIES


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


ROOT_REASON = "needs root (network namespaces, veth pairs)"


@pytest.fixture
def private_locks(tmp_path, monkeypatch):
    """Owner locks of the test's agents in its own directory (FFS_RUN_DIR), not in /run/ffs."""
    monkeypatch.setenv("FFS_RUN_DIR", str(tmp_path / "run"))


# make test and make unit-tests run pytest-xdist's workers (-n). The tests that use what belongs to
# the machine rather than to the test (network namespaces, tofino-model and bf_switchd, fixed ports,
# processes whose timing they bound) are marked `machine` and all run in one worker, one at a time,
# in the order of MACHINE_KINDS: the SDE's runs first, which leave a core to the in-process tests
# of the other workers, the live traffic after. Every other test goes to whichever worker is free,
# at the lowest CPU priority (pytest_runtest_setup).
MACHINE_KINDS = ("sde", "live", "agent", "docs")
# the machine's tests in the other kinds (kind/file::function -> why)
MACHINE_TESTS: dict[str, str] = {
    "switch/test_chain.py::test_the_runner_refuses_without_an_sde_in_one_line_and_makes_nothing": (
        "compares the machine's network namespaces before and after"
    ),
    "unit/test_live_traffic.py::test_paced_sender_measured_by_the_receiver_over_loopback": (
        "a fixed loopback port, and the pace measured by the wall clock"
    ),
}


def uses_the_machine(nodeid: str) -> bool:
    """Whether the test of this node id (tests/kind/file.py::[Class::]function[params]) is a `machine` one."""
    path, *names = nodeid.split("::")
    kind_file = path.removeprefix("tests/")
    return kind_file.split("/")[0] in MACHINE_KINDS or any(
        f"{kind_file}::{name.partition('[')[0]}" in MACHINE_TESTS for name in names
    )


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook; make test-minimum runs without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Each test a unit of work of its own, but the `machine` tests one unit, sent to one worker."""
    from xdist.scheduler import LoadScopeScheduling

    class MachineInOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "machine" if uses_the_machine(nodeid) else nodeid

    return MachineInOneWorker(config, log)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """In an xdist worker, an in-process test (and what it starts) runs at the lowest CPU priority:
    it takes the cycles the `machine` tests leave idle, not those tofino-model or bf_switchd need
    to answer in time. Linux's priority is per thread: this one runs the tests and starts their
    threads and processes."""
    if hasattr(item.config, "workerinput") and item.get_closest_marker("machine") is None:
        os.setpriority(os.PRIO_PROCESS, 0, 19)


@pytest.hookimpl(trylast=True)  # after each kind's conftest.py has marked its tests
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Puts the `machine` tests first, in MACHINE_KINDS' order. A test marked `root`
    (by its kind's folder, or `@pytest.mark.root(reason=...)`) is skipped, with that reason, when
    not run as root."""
    stale = [key for key in MACHINE_TESTS if not _names_a_test(ROOT / "tests", key)]
    if stale:
        raise pytest.UsageError(f"tests/conftest.py: MACHINE_TESTS names what is not in tests/: {stale}")
    rank = {kind: i for i, kind in enumerate(MACHINE_KINDS)}
    items.sort(key=lambda item: rank.get(item.nodeid.removeprefix("tests/").split("/")[0], len(rank)))
    if is_root():
        return
    for item in items:
        mark = item.get_closest_marker("root")
        if mark is not None:
            item.add_marker(pytest.mark.skip(reason=mark.kwargs.get("reason", ROOT_REASON)))


def mark_kind(items: list[pytest.Item], conftest_file: str, slow: dict[str, str] | None = None) -> list[pytest.Item]:
    """Marks the tests under the folder of a kind's conftest.py with the kind (the folder's name),
    `machine` those that use the machine, and `slow` those that `slow` names (a file, or
    file::function; -> why); returns them. A kind's hook sees every test of the session, hence the
    folder test."""
    here = Path(conftest_file).resolve().parent
    slow = slow or {}
    stale = [key for key in slow if not _names_a_test(here, key)]
    if stale:
        raise pytest.UsageError(f"{conftest_file}: SLOW names what is not in {here.name}/: {stale}")
    mine = [item for item in items if here in item.path.parents]
    for item in mine:
        item.add_marker(getattr(pytest.mark, here.name))
        name = getattr(item, "originalname", item.name)
        if item.path.name in slow or f"{item.path.name}::{name}" in slow:
            item.add_marker(pytest.mark.slow)
        if uses_the_machine(item.nodeid):
            item.add_marker(pytest.mark.machine)
    return mine


def _names_a_test(folder: Path, key: str) -> bool:
    file, _, function = key.partition("::")
    path = folder / file
    return path.is_file() and (not function or f"def {function}(" in path.read_text())
