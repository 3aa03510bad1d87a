# SPDX-License-Identifier: Apache-2.0
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


requires_root = pytest.mark.skipif(not is_root(), reason="needs root (network namespaces, veth pairs)")


@pytest.fixture
def private_locks(tmp_path, monkeypatch):
    """Owner locks of the test's agents in its own directory (FFS_RUN_DIR), not in /run/ffs."""
    monkeypatch.setenv("FFS_RUN_DIR", str(tmp_path / "run"))
