# SPDX-License-Identifier: Apache-2.0
"""The control interface refuses bad operations with a clear error and changes nothing; batches are
atomic; the gRPC service behaves like the in-process driver."""

import pytest

from ffs.core import constants, p4names, tables
from ffs.core.entries import Exact, LpfSpec, Lpm, TableEntry, Ternary, Update
from ffs.driver.base import DriverError, TmPortCounts
from ffs.switch.driver import LocalDriver, ModelDriver
from ffs.switch.pipeline import Pipeline
from ffs.switch.runtime import SwitchControl
from ffs.switch.server import check_address, serve
from ffs.switch.tna import PIPES, ControlError
from switchkit import rig


def dump(d):
    out = {}
    for t in p4names.TABLES:
        out[t.name] = (d.read_table(t.name), d.read_default(t.name))
    out["ports"] = d.read_table(p4names.PORT_METADATA.name)
    return out


PAIR = p4names.PAIRS.name


def pair(ing, eg, pid, lm=1, kind="insert"):
    return Update(
        kind,
        TableEntry(
            PAIR, {"ingress_port": Exact(ing), "egress_port": Exact(eg)}, "set_pair", tables.pair_params(pid, lm)
        ),
    )


@pytest.mark.parametrize(
    "bad, message",
    [
        (Update("insert", TableEntry("FfsIngress.nope", {}, "x")), "unknown table"),
        (
            Update("insert", TableEntry(PAIR, {"ingress_port": Exact(1), "egress_port": Exact(9)}, "set_pear", {})),
            "unknown action",
        ),
        (
            Update(
                "insert",
                TableEntry(
                    PAIR, {"ingress_port": Exact(1), "egress_port": Exact(9)}, "set_pair", {"pid": 1 << 12, "nlm": 0}
                ),
            ),
            "does not fit in 12 bits",
        ),
        (
            Update(
                "insert",
                TableEntry(
                    PAIR, {"ingress_port": Exact(512), "egress_port": Exact(9)}, "set_pair", {"pid": 1, "nlm": 0}
                ),
            ),
            "does not fit in 9 bits",
        ),
        (
            Update("insert", TableEntry(PAIR, {"ingress_port": Exact(1)}, "set_pair", {"pid": 1, "nlm": 0})),
            "key fields must be",
        ),
        (
            Update(
                "insert",
                TableEntry(PAIR, {"ingress_port": Exact(1), "egress_port": Exact(3)}, "set_pair", {"pid": 1, "nlm": 0}),
            ),
            "already exists",
        ),
        (Update("delete", TableEntry(PAIR, {"ingress_port": Exact(7), "egress_port": Exact(3)})), "no entry"),
        (
            Update(
                "insert", TableEntry(p4names.IPV4_ROUTES.name, {"dst_addr": Lpm(0x0A000001, 24)}, "route", {"port": 1})
            ),
            "host bits",
        ),
        (
            Update("insert", TableEntry(p4names.F_LOG.name, {"f": Ternary(3, 1)}, "set_lf", {"lf": 1, "nlf": 0xFFFF})),
            "outside the mask",
        ),
        (
            Update(
                "insert",
                TableEntry(
                    p4names.RI_CANDIDATE.name,
                    {"ri_req": Exact(0), "trust": Exact(0), "rri_ge_one": Exact(0), "congested": Exact(0)},
                    "candidate_keep",
                ),
            ),
            "constant",
        ),
        (
            Update(
                "insert",
                TableEntry(
                    p4names.PORT_METADATA.name,
                    {p4names.PORT_METADATA.key.name: Exact(1)},
                    None,
                    {"trust": 256, "insert": 0},
                ),
            ),
            "does not fit in 8 bits",
        ),
        (
            Update(
                "modify",
                TableEntry(
                    p4names.EGRESS_PARAMS.name,
                    {"egress_port": Exact(3)},
                    "set_egress",
                    {"ltau": 0x8000, "ltau_p": 1, "congested": 1, "lcr": 0xFFFF},
                ),
            ),
            "ltau_p must be ltau - 0x8000",
        ),
        (
            Update(
                "modify",
                TableEntry(
                    p4names.EGRESS_PARAMS.name,
                    {"egress_port": Exact(3)},
                    "set_egress",
                    {"ltau": 0x7FFF, "ltau_p": 0xFFFF, "congested": 1, "lcr": 0xFFFF},
                ),
            ),
            r"tau in \[1, 2\^16\]",
        ),
        (
            Update(
                "modify",
                TableEntry(
                    p4names.PAIRS.name,
                    {"ingress_port": Exact(1), "egress_port": Exact(3)},
                    "set_pair",
                    {"pid": 1, "nlm": 0x1000},
                ),
            ),
            "lm <= 0x1000",
        ),
    ],
)
def test_refused_batch_changes_nothing(bad, message):
    r = rig()
    before = dump(r.driver)
    with pytest.raises(DriverError, match=message) as e:
        r.driver.write([pair(1, 9, 77), bad, pair(2, 9, 78)])  # a good update before and after
    assert "\n" not in str(e.value) and "nothing applied" in str(e.value)
    assert dump(r.driver) == before


def test_counter_register_lpf_errors():
    r = rig()
    with pytest.raises(DriverError, match="out of range"):
        r.driver.read_counters(p4names.PAIR_BYTES.name, [constants.NUM_PAIRS])
    with pytest.raises(DriverError, match="unknown counter"):
        r.driver.read_counters("FfsIngress.nothing")
    with pytest.raises(DriverError, match="does not fit in 32 bits"):
        r.driver.write_register(p4names.F_EST.name, 1, 1 << 32)
    with pytest.raises(DriverError, match="bad LPF spec"):
        r.driver.set_lpf_spec(p4names.F_LPF.name, [1], LpfSpec("FAST", 1, 1, 0))


def test_batch_applies_everything_or_nothing():
    r = rig()
    r.driver.write([pair(1, 9, 77), pair(2, 9, 78, lm=5), pair(2, 9, 78, lm=6, kind="modify")])
    got = {(e.key["ingress_port"].value, e.key["egress_port"].value): e.params for e in r.driver.read_table(PAIR)}
    assert got[(1, 9)] == tables.pair_params(77, 1) and got[(2, 9)] == tables.pair_params(78, 6)


def test_defaults_and_clear():
    d = LocalDriver(Pipeline())
    assert d.read_default(p4names.IPV4_ROUTES.name).action.endswith(".no_route")
    d.write([Update("set_default", TableEntry(p4names.IPV4_ROUTES.name, {}, "route", {"port": 4}))])
    assert d.read_default(p4names.IPV4_ROUTES.name).params == {"port": 4}
    d.clear_table(p4names.IPV4_ROUTES.name)
    assert d.read_default(p4names.IPV4_ROUTES.name).action.endswith(".no_route")


def test_listen_address_must_be_loopback():
    assert check_address("localhost:50052") and check_address("unix:/tmp/x.sock")
    with pytest.raises(ValueError, match="not loopback"):
        check_address("0.0.0.0:50052")


def test_grpc_round_trip_matches_local(tmp_path):
    r = rig()
    ctl = SwitchControl(r.pipeline)
    sock = f"unix:{tmp_path}/ctl.sock"
    server = serve(ctl, sock)
    try:
        m = ModelDriver(sock)
        m.connect(timeout_s=10)
        assert m.program_id() == ctl.program_id
        local = LocalDriver(ctl)
        assert m.read_table(PAIR) == local.read_table(PAIR)
        assert m.read_table(p4names.GAMMA.name)[:5] == local.read_table(p4names.GAMMA.name)[:5]
        m.write([pair(1, 9, 77)])
        assert any(e.params["pid"] == 77 for e in local.read_table(PAIR))
        with pytest.raises(DriverError, match="already exists"):
            m.write([pair(1, 9, 77)])
        m.write_register(p4names.F_EST.name, 3, 99)  # into every pipe, as BF-RT's all-pipes target writes
        assert ctl.read_registers(p4names.F_EST.name, [3]) == {3: [99] * PIPES}
        assert (
            m.read_registers(p4names.F_EST.name, [3])
            == {3: 99 * PIPES}
            == local.read_registers(p4names.F_EST.name, [3])
        )
        assert m.read_counters(p4names.ACCEPTED.name, [3])[3].packets == 0
        m.set_lpf_spec(p4names.F_LPF.name, [1, 2], LpfSpec("RATE", 5e5, 5e5, 2))
        assert m.read_lpf_spec(p4names.F_LPF.name, 2) == LpfSpec("RATE", 5e5, 5e5, 2)
        assert m.read_table(p4names.PORT_METADATA.name) == local.read_table(p4names.PORT_METADATA.name)
        r.pipeline.tm.configure(3, 1e6, 2000)  # the TM's counters, as BF-Runtime's tm.counter.eg_port
        r.pipeline.tm.enqueue(3, 0, 1500)
        assert r.pipeline.tm.enqueue(3, 0, 1500) == -1  # beyond the 2000-byte buffer: a tail drop
        assert m.read_tm_ports([3]) == local.read_tm_ports([3]) == {3: TmPortCounts(1, 1500, 0)}
        # read at one instant, now (virtual time: the last packet's): 6 ms at 1 Mb/s sent 750 bytes
        r.pipeline.pktgen.now_ns[0] = 6_000_000
        assert m.read_tm_ports([3]) == local.read_tm_ports([3]) == {3: TmPortCounts(1, 750, 750)}
        m.close()
    finally:
        server.stop(0)


def test_model_driver_reports_unreachable_switch(tmp_path):
    m = ModelDriver(f"unix:{tmp_path}/none.sock")
    with pytest.raises(DriverError, match="did not answer"):
        m.connect(timeout_s=0.5)


def test_a_rig_takes_the_generated_entries_as_written_and_a_table_only_its_own():
    """A rig's generated tables (copied, not written again) read back as the control interface
    leaves them when it writes tables.static_updates(); one table's entries do not go into another."""
    written = Pipeline(1)
    LocalDriver(written).write(tables.static_updates())
    r = rig()
    for name in tables.GENERATED_TABLES:
        assert r.driver.read_table(name) == LocalDriver(written).read_table(name)
    first, second = tables.GENERATED_TABLES[:2]
    with pytest.raises(ControlError, match=f"{second}: cannot take the entries of {first}"):
        r.pipeline.tables[second].take_entries(written.tables[first])
