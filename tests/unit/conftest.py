# SPDX-License-Identifier: Apache-2.0
"""Unit tests: pure functions (labels' arithmetic aside: property/), topology and matrix files, the
allocator's network study, the endpoint's pure parts, the P4 source against the names it must declare;
no switch, no root, no SDE."""

from __future__ import annotations

import pytest

from conftest import mark_kind

# what takes long (a file, or file::function; -> why): make unit-tests leaves it out, make test runs it
SLOW: dict[str, str] = {
    "test_network_cluster.py": "starts a local Dask cluster of two worker processes, and runs the study on it",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_kind(items, __file__, SLOW)
