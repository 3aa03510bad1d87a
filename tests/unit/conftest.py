# SPDX-License-Identifier: Apache-2.0
"""Unit tests: pure functions (labels' arithmetic aside: property/), topology and matrix files, the
allocator's network study, the endpoint's pure parts, the P4 source against the names it must declare;
no switch, no root, no SDE."""

from __future__ import annotations

import pytest

from conftest import mark_kind

# files whose tests take long; make unit-tests leaves them out (make test runs them)
SLOW: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_kind(items, __file__, SLOW)
