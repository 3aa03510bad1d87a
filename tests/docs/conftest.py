# SPDX-License-Identifier: Apache-2.0
"""The tree's own rules: every documented command runs as written, the P4 names the docs show exist,
the layers' imports, function length, licence headers, the resource table of docs/results.md."""

from __future__ import annotations

import pytest

from conftest import mark_kind

# files whose tests take long; make unit-tests leaves them out (make test runs them)
SLOW: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_kind(items, __file__, SLOW)
