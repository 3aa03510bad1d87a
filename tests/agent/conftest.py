# SPDX-License-Identifier: Apache-2.0
"""The agent, ffsctl and the drivers, against the software switch (in process or over its gRPC service)
or a fake of the SDE's client; the agent as a process, as a packaged wheel on other Pythons and as a
systemd unit. The tests that need root say so one by one."""

from __future__ import annotations

import pytest

from conftest import mark_kind

# files whose tests take long; make unit-tests leaves them out (make test runs them)
SLOW: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_kind(items, __file__, SLOW)
