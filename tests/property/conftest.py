# SPDX-License-Identifier: Apache-2.0
"""Property tests: the properties of the label codes and of the exact allocation over inputs hypothesis
draws, and the compiled fast path against the Python pipeline over random table states and packets."""

from __future__ import annotations

import pytest

from conftest import mark_kind

# files whose tests take long; make unit-tests leaves them out (make test runs them)
SLOW: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_kind(items, __file__, SLOW)
