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


@pytest.hookimpl(trylast=True)  # after each kind's conftest.py has marked its tests
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test marked `root` (by its kind's folder, or `@pytest.mark.root(reason=...)`) is skipped,
    with that reason, when not run as root."""
    if is_root():
        return
    for item in items:
        mark = item.get_closest_marker("root")
        if mark is not None:
            item.add_marker(pytest.mark.skip(reason=mark.kwargs.get("reason", ROOT_REASON)))


def mark_kind(items: list[pytest.Item], conftest_file: str, slow: dict[str, str] | None = None) -> list[pytest.Item]:
    """Marks the tests under the folder of a kind's conftest.py with the kind (the folder's name),
    and `slow` those that `slow` names (a file, or file::function; -> why); returns them. A kind's
    hook sees every test of the session, hence the folder test."""
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
    return mine


def _names_a_test(folder: Path, key: str) -> bool:
    file, _, function = key.partition("::")
    path = folder / file
    return path.is_file() and (not function or f"def {function}(" in path.read_text())
