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
