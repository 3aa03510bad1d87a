# SPDX-License-Identifier: Apache-2.0
"""BfrtDriver against the SDE's REAL bfrt_grpc client and a real bf_switchd on tofino-model.

The program is the SDE's bundled example `tna_exact_match` (its `SwitchIngress.forward` table:
exact on hdr.ethernet.dst_addr, actions hit(port) / miss(drop)), so these run wherever an SDE is
installed, before ffs itself is compiled; tests/sde/test_switchd.py runs the agent on the compiled ffs.
They exercise the driver paths the fake in tests/kits/fake_bfrt_grpc.py stands in for: bind, one-
request batches with rollback, read-back, the switch's reason for a refusal, a read that fails
while it is iterated, a deadline on a hung switchd, reconnect. Run them under the live lock:
    python3 -m pytest -q tests/sde/test_bfrt_live.py
(any lock serialising users of tofino-model/switchd on the machine will do).
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from conftest import ROOT
from ffs.core.entries import Exact, TableEntry, Update
from ffs.driver.base import DriverError
from sdekit import running_sde, sde_missing

PROGRAM = "tna_exact_match"
FWD = "SwitchIngress.forward"
KEY = "hdr.ethernet.dst_addr"

pytestmark = pytest.mark.skipif(sde_missing(PROGRAM) is not None, reason=str(sde_missing(PROGRAM)))


def hit(mac: int, port: int) -> TableEntry:
    return TableEntry(FWD, {KEY: Exact(mac)}, "SwitchIngress.hit", {"port": port})


@pytest.fixture(scope="module")
def sde(tmp_path_factory):
    yield from running_sde(PROGRAM, tmp_path_factory, "sde-logs")


@pytest.fixture
def drv(sde):
    from ffs.driver.bfrt import BfrtDriver

    d = BfrtDriver(program=PROGRAM, rpc_timeout_s=5.0)
    d.connect(timeout_s=60)
    try:
        d.clear_table(FWD)
        yield d
    finally:
        if d.iface is not None:
            d.clear_table(FWD)
        d.close()


def test_batch_read_back_delete_and_default(drv):
    drv.write([Update("insert", hit(0x0200_0000_0000 + i, i % 8)) for i in range(100)])
    got = drv.read_table(FWD)
    assert len(got) == 100
    assert got[5] == hit(0x0200_0000_0005, 5)
    drv.write([Update("modify", hit(0x0200_0000_0005, 7)), Update("delete", hit(0x0200_0000_0006, 6))])
    got = {e.key[KEY].value: e.params["port"] for e in drv.read_table(FWD)}
    assert len(got) == 99 and got[0x0200_0000_0005] == 7 and 0x0200_0000_0006 not in got
    drv.write([Update("set_default", TableEntry(FWD, {}, "SwitchIngress.miss", {"drop": 1}))])
    assert drv.read_default(FWD) == TableEntry(FWD, {}, "SwitchIngress.miss", {"drop": 1})


def test_a_refused_batch_is_rolled_back_and_says_why(drv):
    drv.write([Update("insert", hit(0x10, 1))])
    with pytest.raises(DriverError) as err:
        drv.write([Update("insert", hit(0x11, 2)), Update("insert", hit(0x10, 3))])
    msg = str(err.value)
    assert "\n" not in msg and "ALREADY_EXISTS" in msg and "Already exists" in msg, msg
    assert drv.read_table(FWD) == [hit(0x10, 1)]  # 0x11 was undone with the failed one
    with pytest.raises(DriverError, match=r"NOT_FOUND .*Object not found"):
        drv.write([Update("modify", hit(0x12, 1))])
    with pytest.raises(DriverError, match=r"INVALID_ARGUMENT"):
        drv.write([Update("insert", hit(0x13, 1 << 12))])  # port is bit<9>: the switch refuses it


def test_a_value_the_client_refuses_is_a_driver_error(drv):
    with pytest.raises(DriverError, match=rf"^{FWD}: bad value: "):
        drv.write([Update("insert", TableEntry(FWD, {KEY: Exact(1)}, "SwitchIngress.hit", {"port": 1.5}))])
    with pytest.raises(DriverError, match=rf"^{FWD}: bad value: .*nope"):
        drv.write([Update("insert", TableEntry(FWD, {KEY: Exact(1)}, "SwitchIngress.hit", {"nope": 1}))])


def test_a_read_error_raised_while_iterating_is_a_driver_error(drv):
    """The real client returns a generator over the Read stream: a missing key's NOT_FOUND is
    raised only when it is iterated, which the driver does inside its wrapping."""
    t = drv._table(FWD)
    key = t.make_key([drv.gc.KeyTuple(KEY, 0x99)])
    results = t.entry_get(drv.target, [key], {"from_hw": False})  # no error yet
    with pytest.raises(drv.gc.BfruntimeReadWriteRpcException):
        list(results)
    with pytest.raises(DriverError, match=rf"^{FWD}: entry 0: NOT_FOUND .*not found"):
        drv._read(FWD, t.entry_get, drv.target, [key], {"from_hw": False})


def test_a_hung_switchd_costs_one_deadline_and_the_driver_reconnects(sde, drv):
    drv.write([Update("insert", hit(0x20, 2))])
    drv.rpc_timeout_s = drv._stub.timeout_s = 2.0
    os.kill(sde.switchd.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        with pytest.raises(DriverError, match="DEADLINE_EXCEEDED"):
            drv.read_table(FWD)
        assert time.monotonic() - t0 < 4.0
        t0 = time.monotonic()
        drv.close()  # the stream does not end on a stopped switchd: cancelled after one deadline
        assert time.monotonic() - t0 < 5.0
    finally:
        os.kill(sde.switchd.pid, signal.SIGCONT)
    first = drv._program_id
    drv.connect(timeout_s=30)  # the client id was released: bind again
    assert drv.program_id() != first and drv.read_table(FWD) == [hit(0x20, 2)]


def test_the_clients_log_lines_do_not_reach_stderr_raw(drv, capfd):
    drv.close()
    drv.connect(timeout_s=30)  # the client logs "Subscribe attempt #1", "Binding with p4_name ..." at INFO
    assert "Binding with" not in capfd.readouterr().err


def test_after_a_switchd_restart_the_driver_binds_again_as_a_new_program(sde, drv):
    drv.write([Update("insert", hit(0x30, 3))])
    first = drv.program_id()
    sde.stop_switchd()
    with pytest.raises(DriverError, match="UNAVAILABLE"):
        drv.read_table(FWD)
    sde.restart()
    drv.close()
    drv.connect(timeout_s=60)  # retries until switchd has bound the program again
    assert drv.program_id() != first  # the agent re-applies its state on a new program id
    assert drv.read_table(FWD) == []  # a restarted switchd starts from empty tables


def test_ffs_agent_against_a_switchd_without_ffs_fails_in_one_line(sde, tmp_path):
    """`ffs-agent --target tofino` with the real client: bf_switchd runs another program, so the
    agent cannot bind ffs; it says so in one line after its connect timeout, no traceback, and its
    log lines stay JSON (the client's own log handler is gone)."""
    import subprocess
    import sys

    topo = ROOT / "topologies" / "dumbbell.yaml"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "ffs.cli.agent",
            "--target",
            "tofino",
            f"--topology={topo}",
            "--node=s1",
            "--connect-timeout=3",
            "--log-format=json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = p.stderr.strip().splitlines()
    assert p.returncode != 0 and "Traceback" not in p.stderr
    # the operator's --connect-timeout, not what the last attempt had left of it
    said = "ffs-agent: error: bf_switchd's BF-Runtime at localhost:50052 did not answer within 3 s (--connect-timeout)"
    assert lines[-1].startswith(said), p.stderr
    assert "BF_RT_INFO not received" in lines[-1]
    for line in lines[:-1]:
        json.loads(line)
