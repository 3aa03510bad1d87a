# SPDX-License-Identifier: Apache-2.0
"""BfrtDriver's mapping onto bfrt_grpc, checked against the fake of the SDE's `bfrt_grpc.client`
in tests/kits/fake_bfrt_grpc.py (what it models and what it doesn't is said there; tests/sde/test_bfrt_live.py
runs the same driver paths against the real client and bf_switchd). The tests check names, key
tuples, data tuples, one-request batches, per-pipe sums, counter wrap and the client's awkward
corners the fake reproduces.
"""

import logging
import os
import sys

import pytest

import fake_bfrt_grpc
from agentkit import TWO_PIPES_NODE
from conftest import ROOT
from fake_bfrt_grpc import Data, FakeRpcError, FakeTable, Key, KeyTuple, WriteRequest, bfruntime_pb2, read_field
from ffs.core import p4names
from ffs.core.entries import Exact, LpfSpec, Lpm, TableEntry, Ternary, TimerSpec, Update
from ffs.driver.base import DriverError


@pytest.fixture
def fake_sde(monkeypatch):
    log, tables = fake_bfrt_grpc.install(monkeypatch)
    monkeypatch.setattr("ffs.driver.bfrt.time.sleep", lambda s: None)
    from ffs.driver.bfrt import BfrtDriver

    d = BfrtDriver("localhost:50052")
    d.connect(timeout_s=5)
    return d, log, tables


# --- the tests ----------------------------------------------------------------------------------


@pytest.fixture
def no_client_yet(monkeypatch):
    """As in a new agent process: no bfrt_grpc imported, no SDE directory on sys.path (an earlier
    test of this process may have imported the real client through them)."""
    for name in [m for m in sys.modules if m == "bfrt_grpc" or m.startswith("bfrt_grpc.")]:
        monkeypatch.delitem(sys.modules, name)
    from ffs.driver.bfrt import sde_python_paths

    sde = os.environ.get("SDE_INSTALL")
    appended = set(sde_python_paths(sde)) if sde else set()
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in appended])


def test_missing_sde_is_a_clear_error(monkeypatch, tmp_path, no_client_yet):
    (tmp_path / "lib" / "python3.10" / "site-packages").mkdir(parents=True)
    monkeypatch.setenv("SDE_INSTALL", str(tmp_path))
    from ffs.driver.bfrt import BfrtDriver

    with pytest.raises(
        DriverError, match=r"cannot import bfrt_grpc from SDE_INSTALL=.*python3\.10/site-packages/tofino"
    ):
        BfrtDriver()
    monkeypatch.delenv("SDE_INSTALL")
    with pytest.raises(DriverError, match=r"set SDE_INSTALL"):
        BfrtDriver()


def test_connect_retries_while_switchd_starts_then_binds(fake_sde):
    d, log, _ = fake_sde
    assert ("bind", "ffs") in log and log.index(("bind", "ffs")) > log.index(("connect", "localhost:50052", 1))
    first = d.program_id()
    d.close()
    with pytest.raises(DriverError, match="not connected"):
        d.read_table(p4names.PAIRS.name)
    d.connect(timeout_s=1)  # a dropped stream: reconnect, and the agent sees a new program id
    assert d.program_id() != first and ("teardown",) in log


def test_a_batch_is_one_request_rolled_back_on_error(fake_sde):
    d, log, tables = fake_sde
    d.write(
        [
            Update(
                "insert",
                TableEntry(
                    p4names.PAIRS.name,
                    {"ingress_port": Exact(1), "egress_port": Exact(3)},
                    "set_pair",
                    {"pid": 5, "nlm": 99},
                ),
            ),
            Update(
                "insert", TableEntry(p4names.F_LOG.name, {"f": Ternary(0x100, 0xFF80)}, "set_lf", {"lf": 7}, priority=2)
            ),
            Update(
                "insert", TableEntry(p4names.IPV4_ROUTES.name, {"dst_addr": Lpm(0x0A000300, 24)}, "route", {"port": 3})
            ),
            Update("set_default", TableEntry(p4names.IPV4_ROUTES.name, {}, "no_route")),
        ]
    )
    rw = d.iface.reader_writer_interface
    assert len(rw.requests) == 1
    req = rw.requests[0]
    assert req.atomicity == WriteRequest.ROLLBACK_ON_ERROR and req.target == (0, 0xFFFF)
    ups = [u.entity.table_entry for u in req.updates]
    assert [u.type for u in req.updates] == [1, 1, 1, 2]
    assert ups[0].key.to_dict() == {"ingress_port": {"value": 1}, "egress_port": {"value": 3}}
    assert ups[0].data.to_dict() == {"pid": 5, "nlm": 99, "action_name": "FfsIngress.pair_map.set_pair"}
    assert ups[1].key.to_dict() == {"f": {"value": 0x100, "mask": 0xFF80}, "$MATCH_PRIORITY": {"value": 2}}
    assert ups[2].key.to_dict() == {"dst_addr": {"value": 0x0A000300, "prefix_len": 24}}
    assert ups[3].is_default_entry and ups[3].data.action_name == "FfsIngress.forwarding.no_route"

    # a later update fails: the earlier ones of the same request are undone, nothing stays applied
    before = dict(tables[p4names.PAIRS.name].entries)
    with pytest.raises(DriverError, match=r"batch of 2 update\(s\), none applied: .*Already exists$"):
        d.write(
            [
                Update(
                    "modify",
                    TableEntry(
                        p4names.PAIRS.name,
                        {"ingress_port": Exact(1), "egress_port": Exact(3)},
                        "set_pair",
                        {"pid": 5, "nlm": 1},
                    ),
                ),
                Update(
                    "insert",
                    TableEntry(
                        p4names.PAIRS.name,
                        {"ingress_port": Exact(1), "egress_port": Exact(3)},
                        "set_pair",
                        {"pid": 6, "nlm": 2},
                    ),
                ),
            ]
        )
    assert tables[p4names.PAIRS.name].entries == before and len(rw.requests) == 2


def test_read_back_maps_keys_and_priorities(fake_sde):
    d, _, _ = fake_sde
    d.write(
        [
            Update(
                "insert", TableEntry(p4names.F_LOG.name, {"f": Ternary(0x100, 0xFF80)}, "set_lf", {"lf": 7}, priority=3)
            ),
            Update(
                "insert",
                TableEntry(
                    p4names.PORT_METADATA.name,
                    {"ig_intr_md.ingress_port": Exact(4)},
                    None,
                    {"trust": 1, "insert": 0},
                ),
            ),
        ]
    )
    (e,) = d.read_table(p4names.F_LOG.name)
    assert e.key == {"f": Ternary(0x100, 0xFF80)} and e.priority == 3 and e.params == {"lf": 7}
    (pm,) = d.read_table("$PORT_METADATA")
    assert pm.table == p4names.PORT_METADATA.name and pm.action is None and pm.params == {"trust": 1, "insert": 0}


def test_counters_synced_summed_over_pipes_and_wrapped(fake_sde):
    d, log, tables = fake_sde
    c = tables.setdefault(p4names.PAIR_BYTES.name, FakeTable(p4names.PAIR_BYTES.name, log, 90))
    c.reads = {
        7: {"$COUNTER_SPEC_BYTES": [1500, 3000, 0, 0], "$COUNTER_SPEC_PKTS": [1, 2, 0, 0]},
        8: {"$COUNTER_SPEC_BYTES": [2**64 - 10, 20], "$COUNTER_SPEC_PKTS": 5},
    }
    d.hw_read_max_indices = 1  # two indices: more than a hardware read is worth
    got = d.read_counters(p4names.PAIR_BYTES.name, [7, 8])
    assert got[7].bytes == 4500 and got[7].packets == 3
    assert got[8].bytes == 10 and got[8].packets == 5  # the sum wraps modulo 2^64, as 64-bit counters do
    i_sync = log.index(("op", p4names.PAIR_BYTES.name, "Sync"))
    assert log[i_sync + 1] == ("get", p4names.PAIR_BYTES.name, {"from_hw": False})  # Sync, then a software read


def test_a_few_indices_are_read_from_the_hardware_without_a_sync(fake_sde):
    d, log, tables = fake_sde
    c = tables.setdefault(p4names.PAIR_BYTES.name, FakeTable(p4names.PAIR_BYTES.name, log, 90))
    c.rw = d.iface.reader_writer_interface
    c.reads = {i: {"$COUNTER_SPEC_BYTES": 100 * i, "$COUNTER_SPEC_PKTS": i} for i in range(d.hw_read_max_indices)}
    got = d.read_counters(p4names.PAIR_BYTES.name, range(d.hw_read_max_indices))
    assert got[9].bytes == 900 and len(got) == d.hw_read_max_indices
    assert ("op", p4names.PAIR_BYTES.name, "Sync") not in log and log[-1] == (
        "get",
        p4names.PAIR_BYTES.name,
        {"from_hw": True},
    )
    d.read_counters(p4names.PAIR_BYTES.name)  # the whole table: a Sync, then from software
    assert log[-2:] == [("op", p4names.PAIR_BYTES.name, "Sync"), ("get", p4names.PAIR_BYTES.name, {"from_hw": False})]


def test_the_tau_steps_per_egress_counters_always_follow_a_sync(fake_sde):
    """docs/benchmarks.md, "The τ loop at scale": R*_j, A_j and the lies at j are read after one Sync
    of each table however few egress ports there are, so a τ step costs the same at 3 egresses
    (9 pairs) and at 64 (4096 pairs); a pair counter's few indices still come from the hardware."""
    d, log, tables = fake_sde
    for i, name in enumerate((p4names.OFFERED.name, p4names.ADMITTED.name, p4names.MALFORMED.name)):
        c = tables.setdefault(name, FakeTable(name, log, 80 + i))
        c.reads = {p: {"$COUNTER_SPEC_BYTES": [64 * p, 0], "$COUNTER_SPEC_PKTS": [p, 0]} for p in (1, 2, 3)}
        got = d.read_counters(name, [1, 2, 3])
        assert got[2].bytes == 128 and got[3].packets == 3
        assert log[-2:] == [("op", name, "Sync"), ("get", name, {"from_hw": False})]
    c = tables.setdefault(p4names.PAIR_BYTES.name, FakeTable(p4names.PAIR_BYTES.name, log, 90))
    c.reads = {1: {"$COUNTER_SPEC_BYTES": 100, "$COUNTER_SPEC_PKTS": 1}}
    d.read_counters(p4names.PAIR_BYTES.name, [1])
    assert log[-1] == ("get", p4names.PAIR_BYTES.name, {"from_hw": True}) and log[-2] != (
        "op",
        p4names.PAIR_BYTES.name,
        "Sync",
    )


def test_registers_are_synced_and_summed_over_pipes(fake_sde):
    d, log, tables = fake_sde
    r = tables.setdefault(p4names.F_EST.name, FakeTable(p4names.F_EST.name, log, 91))
    r.reads = {i: {f"{p4names.F_EST.name}.f1": [i, 10 * i, 100, 0]} for i in range(3)}
    assert d.read_registers(p4names.F_EST.name) == {0: 100, 1: 111, 2: 122}  # the whole register
    assert ("op", p4names.F_EST.name, "Sync") in log


def test_lpf_spec_for_every_index(fake_sde):
    d, log, _ = fake_sde
    d.set_lpf_spec(p4names.F_LPF.name, range(p4names.F_LPF.size), LpfSpec("RATE", 2e6, 3e6, 4))
    op = [x for x in log if x[0] == "entry_add" and x[1] == p4names.F_LPF.name][-1]
    assert [k["$LPF_INDEX"]["value"] for k in op[2]] == list(range(p4names.F_LPF.size))
    assert op[3][0] == {
        "$LPF_SPEC_TYPE": "RATE",
        "$LPF_SPEC_GAIN_TIME_CONSTANT_NS": 2e6,
        "$LPF_SPEC_DECAY_TIME_CONSTANT_NS": 3e6,
        "$LPF_SPEC_OUT_SCALE_DOWN_FACTOR": 4,
    }


def test_unknown_table_is_a_driver_error(fake_sde):
    d, _, _ = fake_sde
    with pytest.raises(DriverError, match="no table"):
        d.read_table("FfsIngress.nope")
    with pytest.raises(DriverError, match="no table"):
        d.write([Update("insert", TableEntry("FfsIngress.nope", {"x": Exact(1)}, "a"))])


def test_agent_over_bfrt_programs_a_node_and_pushes_tau_in_one_request(fake_sde, tmp_path):

    from ffs.agent.core import Agent
    from ffs.core.topology import load

    d, log, tables = fake_sde
    topo = load(ROOT / "topologies" / "dumbbell.yaml")
    agent = Agent(d, topo, "s1")
    agent.install()
    rw = d.iface.reader_writer_interface
    assert len(rw.requests) == 1  # the whole node: ports, routes, pairs, egresses, generated tables
    names = {u.entity.table_entry.table.name for u in rw.requests[0].updates}
    assert {
        p4names.PORT_METADATA.name,
        p4names.PAIRS.name,
        p4names.EGRESS_PARAMS.name,
        p4names.GAMMA.name,
        p4names.WEIGHT.name,
    } <= names
    assert len(tables[p4names.PAIRS.name].entries) == 9  # 3 egress columns x 3 ingresses
    agent.step(0.0)
    agent.step(0.1)
    assert len(rw.requests) == 2
    push = rw.requests[1]
    assert push.atomicity == WriteRequest.ROLLBACK_ON_ERROR
    assert {u.entity.table_entry.table.name for u in push.updates} == {p4names.EGRESS_PARAMS.name}
    assert all(u.type == bfruntime_pb2.Update.MODIFY for u in push.updates) and len(push.updates) == 3
    pair_reads = [x for x in log if x[0] == "get" and x[1] in (p4names.PAIR_BYTES.name, p4names.F_EST.name)]
    assert pair_reads and all(x[2] == {"from_hw": True} for x in pair_reads)  # 9 pairs: hardware reads, no Sync
    # the τ step's: R*_j, A_j, the lies at j, the shims of R*_j and A_j, the frames stripped at j
    # and the tags pushed and popped toward it (spec §4), after a Sync
    step = {p4names.OFFERED.name, p4names.ADMITTED.name, p4names.MALFORMED.name}
    step |= {p4names.OFFERED_SHIMS.name, p4names.ADMITTED_SHIMS.name, p4names.STRIPPED.name}
    step |= {p4names.TAG_CHANGED.name}
    egress_reads = [x for x in log if x[0] == "get" and x[1] in step]
    assert egress_reads and all(x[2] == {"from_hw": False} for x in egress_reads)
    assert {x[1] for x in log if x[0] == "op"} == step


# --- the real client's awkward spots (each was a raw exception or a lost reason before) --------


def test_a_refused_batch_names_the_switchs_reason_not_a_bare_error_header(fake_sde):
    d, _, _ = fake_sde
    e = TableEntry(
        p4names.PAIRS.name, {"ingress_port": Exact(1), "egress_port": Exact(2)}, "set_pair", {"pid": 1, "lm": 1}
    )
    d.write([Update("insert", e)])
    with pytest.raises(DriverError) as err:
        d.write([Update("insert", e)])
    msg = str(err.value)
    assert "\n" not in msg and "Error(s)" not in msg
    assert msg == (
        "batch of 1 update(s), none applied: entry 0: ALREADY_EXISTS "
        f"Table Add failed table:pipe.{p4names.PAIRS.name} Already exists"
    )


@pytest.mark.parametrize(
    "read",
    [
        lambda d: d.read_counters(p4names.PAIR_BYTES.name),
        lambda d: d.read_registers(p4names.F_EST.name),
        lambda d: d.read_table(p4names.PAIRS.name),
        lambda d: d.read_default(p4names.PAIRS.name),
        lambda d: d.read_lpf_spec(p4names.F_LPF.name, 0),
    ],
    ids=["counters", "registers", "table", "default", "lpf_spec"],
)
def test_a_read_failing_while_its_results_are_iterated_is_a_driver_error(fake_sde, read):
    d, log, tables = fake_sde
    for name in (p4names.PAIR_BYTES.name, p4names.F_EST.name, p4names.PAIRS.name, p4names.F_LPF.name):
        t = tables.setdefault(name, FakeTable(name, log, 100 + len(tables)))
        t.rw = d.iface.reader_writer_interface
        t.reads = {
            0: {"$COUNTER_SPEC_BYTES": 1, "$COUNTER_SPEC_PKTS": 1},
            1: {"$COUNTER_SPEC_BYTES": 1, "$COUNTER_SPEC_PKTS": 1},
        }
        t.fail_read = FakeRpcError("UNAVAILABLE", "Socket closed")
    with pytest.raises(DriverError, match=r": UNAVAILABLE: Socket closed$"):
        read(d)
    for name in (p4names.PAIR_BYTES.name, p4names.F_EST.name, p4names.PAIRS.name, p4names.F_LPF.name):
        tables[name].fail_read = FakeRpcError("UNKNOWN", "Read Error Status", [("NOT_FOUND", "Object not found")])
    with pytest.raises(DriverError, match=r": entry 0: NOT_FOUND Object not found$"):
        read(d)


def test_lpf_time_constants_are_sent_as_floats_even_when_given_as_ints(fake_sde):
    d, log, _ = fake_sde
    d.set_lpf_spec(p4names.F_LPF.name, [0], LpfSpec("RATE", 2_000_000, 3_000_000, 4))  # ints: the client wants floats
    op = [x for x in log if x[0] == "entry_add" and x[1] == p4names.F_LPF.name][-1]
    gain = op[3][0]["$LPF_SPEC_GAIN_TIME_CONSTANT_NS"]
    assert gain == 2e6 and isinstance(gain, float)


def test_a_value_the_client_refuses_is_a_one_line_driver_error_and_nothing_is_sent(fake_sde):
    d, _, _ = fake_sde
    rw = d.iface.reader_writer_interface
    before = len(rw.requests)
    with pytest.raises(DriverError, match=rf"^{p4names.PAIRS.name}: bad value: .*integer"):
        d.write(
            [
                Update(
                    "insert",
                    TableEntry(
                        p4names.PAIRS.name,
                        {"ingress_port": Exact(1), "egress_port": Exact(2)},
                        "set_pair",
                        {"pid": 1.5, "lm": 1},
                    ),
                )
            ]
        )
    assert len(rw.requests) == before


def test_every_rpc_carries_a_deadline_writes_scaled_by_their_size(fake_sde):
    d, _, _ = fake_sde
    stub = d.iface.reader_writer_interface.stub._stub
    updates = [
        Update(
            "insert",
            TableEntry(
                p4names.PAIRS.name, {"ingress_port": Exact(1), "egress_port": Exact(p)}, "set_pair", {"pid": p, "lm": 1}
            ),
        )
        for p in range(200)
    ]
    d.write(updates)
    d.read_table(p4names.PAIRS.name)
    assert stub.timeouts[-2] == ("Write", pytest.approx(d.rpc_timeout_s + 200 * d.write_timeout_per_update_s))
    assert stub.timeouts[-1] == ("Read", d.rpc_timeout_s)
    assert all(t is not None for _, t in stub.timeouts)


def test_the_clients_own_log_handler_is_removed(fake_sde):
    lg = logging.getLogger("bfruntime_grpc_client")
    assert lg.handlers == [] and lg.level == logging.WARNING  # its INFO chatter never reaches stderr raw


def test_sde_paths_are_appended_after_the_agents_own_packages(monkeypatch, tmp_path, no_client_yet):
    pkg = tmp_path / "lib64" / "python3.9" / "site-packages" / "tofino" / "bfrt_grpc"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "client.py").write_text("FROM_SDE = True\n")
    first = list(sys.path)
    monkeypatch.setenv("SDE_INSTALL", str(tmp_path))
    from ffs.driver.bfrt import import_bfrt_grpc

    gc = import_bfrt_grpc()
    assert gc.FROM_SDE and sys.path[: len(first)] == first  # nothing put in front of the agent's grpcio
    assert str(pkg.parent) in sys.path[len(first) :]  # lib64 searched too
    # plain deletes: monkeypatch.delitem's undo would put this stand-in back into sys.modules, and a
    # later test on the real SDE would import it instead of the client
    for name in [m for m in sys.modules if m == "bfrt_grpc" or m.startswith("bfrt_grpc.")]:
        del sys.modules[name]


def test_agent_step_on_a_failing_read_raises_driver_error_the_service_catches(fake_sde):

    from ffs.agent.core import Agent
    from ffs.core.topology import load

    d, log, tables = fake_sde
    topo = load(ROOT / "topologies" / "dumbbell.yaml")
    agent = Agent(d, topo, "s1")
    agent.install()
    agent.step(0.0)
    tables[p4names.OFFERED.name].fail_read = FakeRpcError("UNAVAILABLE", "Socket closed")
    with pytest.raises(DriverError, match="UNAVAILABLE"):
        agent.step(0.1)


def test_agent_restart_over_bfrt_reads_back_and_writes_nothing(fake_sde, tmp_path):
    """Reconciliation through the Driver interface (docs/control-plane.md, "Restarts"): a second agent
    on a switch that holds the node reads every owned table and sends no write request; a cleared
    pairs table comes back as one request of inserts."""

    from ffs.agent.core import Agent
    from ffs.agent.state import StateStore
    from ffs.core.topology import load

    d, log, tables = fake_sde
    topo = load(ROOT / "topologies" / "dumbbell.yaml")
    Agent(d, topo, "s1", store=StateStore(tmp_path)).install()
    rw = d.iface.reader_writer_interface
    assert len(rw.requests) == 1
    again = Agent(d, topo, "s1", store=StateStore(tmp_path))
    again.install()
    assert len(rw.requests) == 1  # read back, found right: nothing written
    tables[p4names.PAIRS.name].entries.clear()
    again.check()  # (the fake keeps no LPF specs, so the agent also rewrites those, outside requests)
    assert len(rw.requests) == 2 and len(rw.requests[1].updates) == 9
    assert all(u.type == bfruntime_pb2.Update.INSERT for u in rw.requests[1].updates)


# --- a node across two pipes of a 2-pipe Tofino --------------------------------------------------


def _front_panel(log, tables):
    """$PORT_STR_INFO of the stand-in: 1/0 is device port 0 (pipe 0), 17/1 device port 129 (pipe 1)."""
    t = tables.setdefault("$PORT_STR_INFO", FakeTable("$PORT_STR_INFO", log, 200))
    for fp, dev in (("1/0", 0), ("17/1", 129)):
        k = Key([KeyTuple("$PORT_NAME", fp)])
        t.entries[k.frozen()] = (k, Data([read_field("$DEV_PORT", dev)]))


def _traffic(tables, log, agent, split):
    """One second of traffic both ways between port 0 (pipe 0) and port 129 (pipe 1), as a 2-pipe
    Tofino answers the reads for every pipe (`split`: one value per pipe) or as their totals."""
    from ffs.core.ports import pipe_of

    port = {"a": 0, "b": 129}

    def cell(pipe, x):
        per_pipe = [x if k == pipe else 0 for k in range(2)]
        return per_pipe if split else x

    def counter(pipe, nbytes, packets):
        return {"$COUNTER_SPEC_BYTES": cell(pipe, nbytes), "$COUNTER_SPEC_PKTS": cell(pipe, packets)}

    def reads(name):
        return tables.setdefault(name, FakeTable(name, log, 300 + len(tables)))

    reads(p4names.PAIR_BYTES.name).reads, reads(p4names.PAIR_DROPS.name).reads, reads(p4names.F_EST.name).reads = (
        {},
        {},
        {},
    )
    for p in agent.pairs():
        pipe, moving = pipe_of(port[p.ingress]), p.ingress != p.egress  # a pair lives in its ingress pipe
        reads(p4names.PAIR_BYTES.name).reads[p.pid] = counter(pipe, 1_000_000 * moving, 800 * moving)
        reads(p4names.PAIR_DROPS.name).reads[p.pid] = counter(pipe, 250_000 * moving, 200 * moving)
        reads(p4names.F_EST.name).reads[p.pid] = {f"{p4names.F_EST.name}.f1": cell(pipe, 3000 * moving)}
    # R*_j and A_j are counted in the pipe the packets came in (b's traffic to a in pipe 1)
    reads(p4names.OFFERED.name).reads = {0: counter(1, 1_250_000, 1000), 129: counter(0, 1_250_000, 1000)}
    reads(p4names.ADMITTED.name).reads = {0: counter(1, 1_000_000, 800), 129: counter(0, 1_000_000, 800)}


def test_a_2_pipe_tofino_reads_one_value_per_pipe_and_the_driver_sums_them(fake_sde):
    """A read for every pipe answers [pipe 0, pipe 1] per cell: a pair entering on port 129 has its
    bytes and its estimate in pipe 1 and 0 in pipe 0, so the sum is the pipe's value."""
    d, log, tables = fake_sde
    c = tables.setdefault(p4names.ACCEPTED.name, FakeTable(p4names.ACCEPTED.name, log, 92))
    c.reads = {
        0: {"$COUNTER_SPEC_BYTES": [1500, 0], "$COUNTER_SPEC_PKTS": [1, 0]},
        129: {"$COUNTER_SPEC_BYTES": [0, 3000], "$COUNTER_SPEC_PKTS": [0, 2]},
    }
    got = d.read_counters(p4names.ACCEPTED.name, [0, 129])
    assert (got[0].packets, got[0].bytes, got[129].packets, got[129].bytes) == (1, 1500, 2, 3000)
    r = tables.setdefault(p4names.F_EST.name, FakeTable(p4names.F_EST.name, log, 93))
    r.reads = {1: {f"{p4names.F_EST.name}.f1": [0, 4321]}, 2: {f"{p4names.F_EST.name}.f1": [1234, 0]}}
    assert d.read_registers(p4names.F_EST.name, [1, 2]) == {1: 4321, 2: 1234}


def test_ports_in_pipe_1_are_looked_up_added_enabled_and_read_by_device_port(fake_sde):
    from ffs.core import ports

    d, log, tables = fake_sde
    _front_panel(log, tables)
    assert (d.port_of("17/1"), d.port_of("1/0")) == (129, 0)
    with pytest.raises(DriverError, match="no front-panel port '9/9'"):
        d.port_of("9/9")
    d.write_ports(adds=[ports.spec(129, 100e9, mtu=9000), ports.spec(130, 10e9)])
    add = [x for x in log if x[:2] == ("entry_add", "$PORT")][-1]
    assert add[2] == [{"$DEV_PORT": {"value": 129}}, {"$DEV_PORT": {"value": 130}}]
    assert add[3][0] == {
        "$SPEED": "BF_SPEED_100G",
        "$FEC": "BF_FEC_TYP_REED_SOLOMON",
        "$AUTO_NEGOTIATION": "PM_AN_DEFAULT",
        "$TX_MTU": 9022,  # the MAC's frame limit for an IP MTU of 9000 (spec §4)
        "$RX_MTU": 9022,
        "$PORT_ENABLE": True,
    }
    d.write_ports(deletes=[130])
    d.write_ports(adds=[ports.PortSpec(130, "BF_SPEED_10G", "BF_FEC_TYP_NONE", "PM_AN_DEFAULT", enable=False)])
    d.write_ports(enables=[130])
    d.write_ports(limits=[ports.spec(130, 10e9, mtu=1500)])
    mods = [x for x in log if x[:2] == ("entry_mod", "$PORT")]
    assert [x[2] for x in mods] == [[{"$DEV_PORT": {"value": 130}}]] * 2
    assert mods[-1][3] == [{"$TX_MTU": 1522, "$RX_MTU": 1522}]
    held = d.read_ports([129, 130, 131])
    assert sorted(held) == [129, 130] and held[129].spec == ports.spec(129, 100e9, mtu=9000) and held[130].up
    assert ports.pipe_of(129) == ports.pipe_of(130) == 1


def test_agent_over_bfrt_on_two_pipes_sees_the_totals_of_one(fake_sde, tmp_path):
    """The agent on a node across pipes 0 and 1 (ports added through $PORT at device ports 0 and
    129) reads per-pipe lists and computes the same rates, F, drops and τ as from the totals."""
    from ffs.agent.core import Agent
    from ffs.core.topology import load

    d, log, tables = fake_sde
    _front_panel(log, tables)
    (tmp_path / "two-pipes.yaml").write_text(TWO_PIPES_NODE)
    topo = load(tmp_path / "two-pipes.yaml")
    snaps = []
    for split in (False, True):
        a = Agent(d, topo, "s1", manage_ports=True, telemetry_period_s=0.5)
        a.install(now_s=0.0)
        for t in tables.values():  # the counters from zero for each agent
            t.reads = {}
        a.step(0.0)
        _traffic(tables, log, a, split)
        snaps.append(a.step(1.0))
    assert sorted(tables["$PORT"].entries) == [(("$DEV_PORT", 0, None, None),), (("$DEV_PORT", 129, None, None),)]
    total, split = snaps
    assert {(p.interface, p.dev_port, p.pipe, p.up) for p in split.ports} == {("a", 0, 0, True), ("b", 129, 1, True)}
    assert [
        (e.egress, e.pipe, e.accepted_bps, e.offered_bps, e.tau, e.congested, e.drop_bps) for e in split.egresses
    ] == [(e.egress, e.pipe, e.accepted_bps, e.offered_bps, e.tau, e.congested, e.drop_bps) for e in total.egresses]
    assert [(x.pid, x.pipe, x.rate_bps, x.f_bps, x.drop_bps, x.drops) for x in split.pairs] == [
        (x.pid, x.pipe, x.rate_bps, x.f_bps, x.drop_bps, x.drops) for x in total.pairs
    ]
    ba = next(x for x in split.pairs if (x.ingress, x.egress) == ("b", "a"))
    assert ba.pipe == 1 and ba.rate_bps > 0 and ba.f_bps > 0 and ba.drops == 200
    assert {e.egress: e.pipe for e in split.egresses} == {"a": 0, "b": 1} and all(
        e.accepted_bps > 0 for e in split.egresses
    )


# --- the packet generator's timer (spec §7.7): the SDE's fixed tf1/tf2.pktgen tables -------------


def _mods(log, table):
    return [(x[2], x[3]) for x in log if x[:2] == ("entry_mod", table)]


@pytest.mark.parametrize("chip", ["tf1", "tf2"])
def test_the_agents_timer_is_one_every_chip_generates(monkeypatch, chip):
    """The guard's timer as the agent asks for it (one packet per managed egress) is written on
    either chip: Tofino 2's SDE refuses packets below 65 bytes."""

    from ffs.core.program import guard_timer
    from ffs.core.topology import load
    from ffs.driver.bfrt import BfrtDriver

    fake_bfrt_grpc.install(monkeypatch, chip=chip, pipes=2)
    monkeypatch.setattr("ffs.driver.bfrt.time.sleep", lambda s: None)
    d = BfrtDriver()
    d.connect(timeout_s=5)
    timer = guard_timer(load(ROOT / "topologies" / "dumbbell.yaml").node("s1"), 100_000)
    assert timer is not None
    d.set_timer(timer)
    assert d.read_timer() == timer


@pytest.mark.parametrize("chip, local", [("tf1", 68), ("tf2", 6)])
def test_the_timer_runs_on_the_generators_port_of_every_pipe_and_reads_back(monkeypatch, chip, local):
    """Spec §7.1/§7.7: the generator's pipe-local port is 68 on Tofino 1 and 6 on Tofino 2, device
    port pipe << 7 | that; an 80-byte timer packet is the 6-byte header the generator writes and 74
    bytes from its buffer; packet_id runs 0 .. packets - 1 in one batch. Tofino 2's SDE refuses
    packets below 65 bytes."""
    log, _ = fake_bfrt_grpc.install(monkeypatch, chip=chip, pipes=2)
    monkeypatch.setattr("ffs.driver.bfrt.time.sleep", lambda s: None)
    from ffs.driver.bfrt import BfrtDriver

    d = BfrtDriver()
    d.connect(timeout_s=5)
    assert d.has_pktgen and d.read_timer() is None
    if chip == "tf2":  # Tofino 2's SDE generates 65 bytes or more: refused here, nothing sent
        with pytest.raises(DriverError, match=r"^tf2.pktgen.app_cfg: this chip generates packets of 65 bytes or more"):
            d.set_timer(TimerSpec(period_ns=250_000_000, packets=3, packet_len=64))
        assert not [x for x in log if x[0] == "entry_mod"]
    d.set_timer(TimerSpec(period_ns=250_000_000, packets=3, packet_len=80))
    app = _mods(log, f"{chip}.pktgen.app_cfg")
    assert [k for k, _ in app] == [[{"app_id": {"value": 1}}]] * 2
    config, enable = app[0][1][0], app[1][1][0]
    want = {
        "timer_nanosec": 250_000_000,
        "app_enable": False,
        "pkt_len": 80 - 6,
        "pkt_buffer_offset": 0,
        "pipe_local_source_port": local,
        "increment_source_port": False,
        "batch_count_cfg": 0,
        "packets_per_batch_cfg": 3 - 1,
        "ibg": 0,
        "ibg_jitter": 0,
        "ipg": 0,
        "ipg_jitter": 0,
        "action_name": "trigger_timer_periodic",
    }
    if chip == "tf2":
        want["assigned_chnl_id"] = local
    assert config == want
    assert enable == {"app_enable": True, "action_name": "trigger_timer_periodic"}  # enabled last
    ((buf_key, buf),) = _mods(log, f"{chip}.pktgen.pkt_buffer")
    assert buf_key == [{"pkt_buffer_offset": {"value": 0}, "pkt_buffer_size": {"value": 74}}]
    assert buf == [{"buffer": bytearray(74)}]
    ((ports, on),) = _mods(log, f"{chip}.pktgen.port_cfg")
    assert ports == [{"dev_port": {"value": local}}, {"dev_port": {"value": 128 + local}}]
    assert on == [{"pktgen_enable": True}] * 2
    order = [x[1] for x in log if x[0] == "entry_mod"]
    assert order.index(f"{chip}.pktgen.port_cfg") < len(order) - 1 == order.index(f"{chip}.pktgen.app_cfg", 1)
    assert d.read_timer() == TimerSpec(period_ns=250_000_000, packets=3, packet_len=80)

    d.set_timer(None)
    assert _mods(log, f"{chip}.pktgen.app_cfg")[-1] == ([{"app_id": {"value": 1}}], [{"app_enable": False}])
    assert _mods(log, f"{chip}.pktgen.port_cfg")[-1][1] == [{"pktgen_enable": False}] * 2
    assert d.read_timer() is None


def test_a_switch_without_a_packet_generator_says_so_in_one_line_and_sends_nothing(monkeypatch):
    log, _ = fake_bfrt_grpc.install(monkeypatch, chip=None)
    monkeypatch.setattr("ffs.driver.bfrt.time.sleep", lambda s: None)
    from ffs.driver.bfrt import BfrtDriver

    d = BfrtDriver()
    d.connect(timeout_s=5)
    for call in (lambda: d.set_timer(TimerSpec(100_000, 1)), d.read_timer):
        with pytest.raises(DriverError, match=r"^this switch's BF-Runtime has no packet generator \(no tf1/tf2"):
            call()
    assert not [x for x in log if x[0] == "entry_mod"]


def test_a_refused_timer_is_a_one_line_driver_error(fake_sde, monkeypatch):
    d, log, tables = fake_sde
    d.set_timer(TimerSpec(100_000, 2))

    def refuse(*a, **kw):
        raise fake_bfrt_grpc.BfruntimeReadWriteRpcException(
            FakeRpcError("UNKNOWN", "Write Error Status", [("UNAVAILABLE", "pktgen app busy")])
        )

    monkeypatch.setattr(tables["tf1.pktgen.app_cfg"], "entry_mod", refuse)
    with pytest.raises(DriverError) as err:
        d.set_timer(TimerSpec(200_000, 2))
    assert str(err.value) == "tf1.pktgen.app_cfg: entry 0: UNAVAILABLE pktgen app busy"


def test_the_program_is_named_by_the_p4src_hash_make_build_installed(fake_sde, monkeypatch, tmp_path):
    drv, _, _ = fake_sde
    monkeypatch.setenv("SDE_INSTALL", str(tmp_path))
    assert drv.program_identity() == "ffs (no p4src.sha256 under $SDE_INSTALL/share/*pd/ffs)"
    for chip, digest in (("tofino", "3f2a" * 16), ("tofino2", "3f2a" * 16)):  # install-conf's files
        (tmp_path / "share" / f"{chip}pd" / "ffs").mkdir(parents=True)
        (tmp_path / "share" / f"{chip}pd" / "ffs" / "p4src.sha256").write_text(digest + "\n")
    assert drv.program_identity() == "ffs p4src 3f2a3f2a3f2a"  # both chips' builds from one source
    (tmp_path / "share" / "tofino2pd" / "ffs" / "p4src.sha256").write_text("b" * 64 + "\n")
    assert drv.program_identity() == "ffs p4src 3f2a3f2a3f2a (tofino), bbbbbbbbbbbb (tofino2)"
