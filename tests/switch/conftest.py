# SPDX-License-Identifier: Apache-2.0
"""The software switch (the executable specification) in virtual time: its pipeline, control service,
traffic manager and trace loop, and the papers' claims run packet by packet through it with the agent;
no root, no SDE."""

from __future__ import annotations

import pytest

from conftest import mark_kind

# files whose tests take long; make unit-tests leaves them out (make test runs them)
SLOW: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_kind(items, __file__, SLOW)
