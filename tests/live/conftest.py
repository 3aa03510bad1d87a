# SPDX-License-Identifier: Apache-2.0
"""Live tests: the software switch on real interfaces (network namespaces, veth pairs, raw sockets)
with real traffic, and the PTF suite through them; they need root, and are skipped, saying so,
without it."""

from __future__ import annotations

import pytest

from conftest import mark_kind

# what takes long (a file, or file::function; -> why): make unit-tests leaves it out, make test runs it
SLOW: dict[str, str] = {}
# files that also test what needs no root: their tests that need it are marked one by one
PARTLY_ROOT = {"test_netns.py", "test_endpoint_cli.py", "test_ptf_suite.py"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in mark_kind(items, __file__, SLOW):
        if item.path.name not in PARTLY_ROOT:
            item.add_marker(pytest.mark.root)
