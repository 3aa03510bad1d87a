# SPDX-License-Identifier: Apache-2.0
"""ptf-tests/tests/base.py's FfsTest releases its BF-Runtime binding when setUp fails part-way:
unittest skips tearDown then, and a binding left open makes bf_switchd refuse the next test's
client ("Can't have two clients with the same client id") until its 60 s connect timeout."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT
from ffs.driver.base import DriverError

SUITE = ROOT / "ptf-tests" / "tests"
ptf = pytest.importorskip("ptf", reason="the ptf package is not installed (make setup)")
pytest.importorskip("scapy", reason="scapy is not installed (make setup)")


class Dataplane:
    ports: dict = {}
    qlen = 100

    def flush(self) -> None:
        pass

    def set_qlen(self, qlen: int) -> None:
        self.qlen = qlen


class Recording:
    """A Driver that connects, then fails at the n-th read or write (or never)."""

    def __init__(self, log: list, fail_at: int | None) -> None:
        self.log, self.fail_at, self.calls = log, fail_at, 0

    def connect(self, timeout_s: float = 0) -> None:
        self.log.append("connect")

    def close(self) -> None:
        self.log.append("close")

    def __getattr__(self, name):
        def op(*args, **kw):
            self.calls += 1
            if self.fail_at is not None and self.calls >= self.fail_at:
                raise DriverError(f"{name}: UNAVAILABLE: Socket closed")
            self.log.append(name)
            if name == "read_table":
                return []
            if name == "read_default":
                from ffs.core.entries import TableEntry

                return TableEntry(args[0], {}, None, {})
            if name == "read_lpf_spec":
                from ffs.core.entries import LpfSpec

                return LpfSpec("RATE", 1.0, 1.0, 4)
            if name == "read_registers":
                return {}
            return None

        return op


@pytest.fixture
def base(monkeypatch):
    monkeypatch.syspath_prepend(str(SUITE))
    monkeypatch.setattr(ptf, "dataplane_instance", Dataplane(), raising=False)
    monkeypatch.setattr(ptf, "config", {"test_params": "", "log_file": "/dev/null"}, raising=False)
    monkeypatch.setattr(ptf, "open_logfile", lambda name: None, raising=False)
    for m in ("base", "expect"):
        sys.modules.pop(m, None)
    import base as b

    yield b
    for m in ("base", "expect"):
        sys.modules.pop(m, None)


class Probe:
    def runTest(self) -> None:
        pass


@pytest.mark.parametrize(
    "fail_at", [1, 3, -1]
)  # while saving state, checking the static tables, the last step of base_setup
def test_a_failing_setup_closes_the_binding(base, monkeypatch, fail_at):
    log: list = []
    if fail_at == -1:
        ok = Recording([], None)
        monkeypatch.setattr(base, "make_driver", lambda: ok)
        monkeypatch.setattr(base._StaticTables, "verified", True)
        type("T", (base.FfsTest, Probe), {})().setUp()
        fail_at = ok.calls  # the last call of a complete setUp
    monkeypatch.setattr(base, "make_driver", lambda: Recording(log, fail_at))
    monkeypatch.setattr(base._StaticTables, "verified", fail_at != 3)
    t = type("T", (base.FfsTest, Probe), {})()
    with pytest.raises(DriverError):
        t.setUp()
    assert log[0] == "connect" and log[-1] == "close" and log.count("close") == 1
    assert t.driver is None


def test_a_failing_restore_in_teardown_still_closes(base, monkeypatch):
    log: list = []
    d = Recording(log, None)
    monkeypatch.setattr(base, "make_driver", lambda: d)
    monkeypatch.setattr(base._StaticTables, "verified", True)
    t = type("T", (base.FfsTest, Probe), {})()
    t.setUp()
    d.fail_at = d.calls + 1  # the switch goes away during the test
    with pytest.raises(DriverError):
        t.tearDown()
    assert log[-1] == "close" and t.driver is None
