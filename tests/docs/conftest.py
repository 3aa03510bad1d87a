# SPDX-License-Identifier: Apache-2.0
"""The tree's own rules: every documented command runs as written, the P4 names the docs show exist,
the layers' imports, function length, licence headers, the resource table of docs/results.md."""

from __future__ import annotations

import pytest

from conftest import mark_kind

# what takes long (a file, or file::function; -> why): make unit-tests leaves it out, make test runs it
SLOW: dict[str, str] = {
    "test_docs_commands.py": "runs every command the docs show: demos, experiments, the SDE's builds",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_kind(items, __file__, SLOW)
