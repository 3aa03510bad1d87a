# SPDX-License-Identifier: Apache-2.0
"""Property tests: the properties of the label codes and of the exact allocation over inputs hypothesis
draws, and the compiled fast path against the Python pipeline over random table states and packets."""

from __future__ import annotations

import pytest

from conftest import mark_kind

# what takes long (a file, or file::function; -> why): make unit-tests leaves it out, make test runs it
SLOW: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_kind(items, __file__, SLOW)
