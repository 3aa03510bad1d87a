# SPDX-License-Identifier: Apache-2.0
"""What needs a Tofino SDE: tofino-model, bf_switchd, bf-p4c, the SDE's bfrt_grpc client (and root for
the model's veths and bf_switchd's hugepages). Each file skips, saying why, without them."""

from __future__ import annotations

import pytest

from conftest import mark_kind

# what takes long (a file, or file::function; -> why): make unit-tests leaves it out, make test runs it
SLOW: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_kind(items, __file__, SLOW)
