"""BfrtDriver's mapping onto bfrt_grpc, checked against a small fake of the SDE's `bfrt_grpc.client`
(the one boundary we cannot reach here: no SDE). The fake records calls and keeps table state."""

import sys
import types

import pytest

from ffs import p4names as N
from ffs.driver.base import DriverError, Exact, LpfSpec, Lpm, TableEntry, Ternary, Update


class KeyTuple:
    def __init__(self, name, value=None, mask=None, prefix_len=None, low=None, high=None):
        self.name, self.value, self.mask, self.prefix_len, self.low, self.high = name, value, mask, prefix_len, low, high


class DataTuple:
    def __init__(self, name, val=None, float_val=None, str_val=None):
        self.name = name
        self.val = next(v for v in (val, float_val, str_val) if v is not None)


class Target:
    def __init__(self, device_id, pipe_id):
        self.device_id, self.pipe_id = device_id, pipe_id


class _Key:
    def __init__(self, tuples):
        self.tuples = tuples

    def frozen(self):
        return tuple((t.name, t.value, t.mask, t.prefix_len) for t in self.tuples)

    def to_dict(self):
        d = {}
        for t in self.tuples:
            v = {"value": t.value}
            if t.mask is not None:
                v["mask"] = t.mask
            if t.prefix_len is not None:
                v["prefix_len"] = t.prefix_len
            d[t.name] = v
        return d


class _Data:
    def __init__(self, tuples, action=None):
        self.tuples, self.action = tuples, action

    def to_dict(self):
        d = {t.name: t.val for t in self.tuples}
        if self.action:
            d["action_name"] = self.action
        return d


class FakeTable:
    def __init__(self, name, log, fail_on=None):
        self.name, self.log, self.fail_on = name, log, fail_on
        self.entries = {}
        self.cells = {}

    def make_key(self, tuples):
        return _Key(tuples)

    def make_data(self, tuples, action=None):
        return _Data(tuples, action)

    def entry_add(self, target, keys, datas):
        self.log.append(("add", self.name, [k.to_dict() for k in keys], [d.to_dict() for d in datas]))
        if self.fail_on == "add":
            raise RuntimeError("Already exists")
        for k, d in zip(keys, datas):
            self.entries[k.frozen()] = (k, d)

    def entry_mod(self, target, keys, datas):
        self.log.append(("mod", self.name, [k.to_dict() for k in keys], [d.to_dict() for d in datas]))
        for k, d in zip(keys, datas):
            self.entries[k.frozen()] = (k, d)

    def entry_del(self, target, keys=None):
        self.log.append(("del", self.name, None if keys is None else [k.to_dict() for k in keys]))
        if keys is None:
            self.entries.clear()
        for k in keys or []:
            self.entries.pop(k.frozen(), None)

    def entry_get(self, target, keys=None, flags=None):
        if self.name.endswith("f_est"):
            for i in range(3):
                yield _Data([DataTuple(f"{self.name}.f1", [i, 10 * i, 100])]), _Key([KeyTuple("$REGISTER_INDEX", i)])
            return
        if self.name.endswith("pair_bytes"):
            yield _Data([DataTuple("$COUNTER_SPEC_BYTES", 1500), DataTuple("$COUNTER_SPEC_PKTS", 1)]), _Key([KeyTuple("$COUNTER_INDEX", 7)])
            return
        for k, d in self.entries.values():
            yield d, k

    def operations_execute(self, target, op):
        self.log.append(("op", self.name, op))

    def default_entry_set(self, target, data):
        self.log.append(("default", self.name, data.to_dict()))


@pytest.fixture
def fake_sde(monkeypatch):
    log = []
    tables = {}

    class Info:
        def table_get(self, name):
            if name == "FfsIngress.nope":
                raise KeyError(name)
            return tables.setdefault(name, FakeTable(name, log))

    class ClientInterface:
        def __init__(self, address, client_id, device_id):
            log.append(("connect", address, client_id))

        def bfrt_info_get(self, name):
            return Info()

        def bind_pipeline_config(self, name):
            log.append(("bind", name))

        def tear_down_stream(self):
            log.append(("teardown",))

    client = types.ModuleType("bfrt_grpc.client")
    client.ClientInterface, client.KeyTuple, client.DataTuple, client.Target = ClientInterface, KeyTuple, DataTuple, Target
    pkg = types.ModuleType("bfrt_grpc")
    pkg.client = client
    monkeypatch.setitem(sys.modules, "bfrt_grpc", pkg)
    monkeypatch.setitem(sys.modules, "bfrt_grpc.client", client)
    from ffs.driver.bfrt import BfrtDriver

    d = BfrtDriver("localhost:50052")
    d.connect(timeout_s=1)
    return d, log, tables


def test_missing_sde_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delitem(sys.modules, "bfrt_grpc.client", raising=False)
    monkeypatch.delitem(sys.modules, "bfrt_grpc", raising=False)
    monkeypatch.setenv("SDE_INSTALL", str(tmp_path))
    from ffs.driver.bfrt import BfrtDriver

    with pytest.raises(DriverError, match="cannot import bfrt_grpc from SDE_INSTALL="):
        BfrtDriver()
    monkeypatch.delenv("SDE_INSTALL")
    with pytest.raises(DriverError, match="set SDE_INSTALL"):
        BfrtDriver()


def test_connect_binds_the_program(fake_sde):
    _, log, _ = fake_sde
    assert ("bind", "ffs") in log


def test_entries_map_to_key_and_data_tuples(fake_sde):
    d, log, _ = fake_sde
    d.write([
        Update("insert", TableEntry(N.PAIRS.name, {"ingress_port": Exact(1), "egress_port": Exact(3)}, "set_pair", {"pid": 5, "lm": 99})),
        Update("insert", TableEntry(N.F_LOG.name, {"f": Ternary(0x100, 0xFF80)}, "set_lf", {"lf": 7})),
        Update("insert", TableEntry(N.IPV4_ROUTES.name, {"dst_addr": Lpm(0x0A000300, 24)}, "route", {"port": 3})),
    ])
    adds = [x for x in log if x[0] == "add"]
    assert adds[0][2] == [{"ingress_port": {"value": 1}, "egress_port": {"value": 3}}]
    assert adds[0][3] == [{"pid": 5, "lm": 99, "action_name": "FfsIngress.pair_map.set_pair"}]
    assert adds[1][2] == [{"f": {"value": 0x100, "mask": 0xFF80}, "$MATCH_PRIORITY": {"value": 0}}]
    assert adds[2][2] == [{"dst_addr": {"value": 0x0A000300, "prefix_len": 24}}]


def test_failed_batch_is_rolled_back(fake_sde):
    d, log, tables = fake_sde
    tables[N.EGRESS_PARAMS.name] = FakeTable(N.EGRESS_PARAMS.name, log, fail_on="add")
    with pytest.raises(DriverError, match="1 earlier update\\(s\\) rolled back"):
        d.write([
            Update("insert", TableEntry(N.PAIRS.name, {"ingress_port": Exact(1), "egress_port": Exact(3)}, "set_pair", {"pid": 5, "lm": 1})),
            Update("insert", TableEntry(N.EGRESS_PARAMS.name, {"egress_port": Exact(3)}, "set_egress", {"ltau": 1, "ntau": 2, "congested": 0, "lcr": 3})),
        ])
    assert tables[N.PAIRS.name].entries == {}  # the first insert was undone
    assert log[-1][0] == "del"


def test_registers_are_synced_and_summed_over_pipes(fake_sde):
    d, log, _ = fake_sde
    assert d.read_registers(N.F_EST.name) == {0: 100, 1: 111, 2: 122}
    assert ("op", N.F_EST.name, "Sync") in log
    c = d.read_counters(N.PAIR_BYTES.name)
    assert c[7].bytes == 1500 and c[7].packets == 1


def test_lpf_spec_for_every_index(fake_sde):
    d, log, _ = fake_sde
    d.set_lpf_spec(N.F_LPF.name, [0, 1, 2], LpfSpec("RATE", 2e6, 3e6, 4))
    op = [x for x in log if x[0] == "add" and x[1] == N.F_LPF.name][-1]
    assert [k["$LPF_INDEX"]["value"] for k in op[2]] == [0, 1, 2]
    assert op[3][0] == {"$LPF_SPEC_TYPE": "RATE", "$LPF_SPEC_GAIN_TIME_CONSTANT_NS": 2e6,
                        "$LPF_SPEC_DECAY_TIME_CONSTANT_NS": 3e6, "$LPF_SPEC_OUT_SCALE_DOWN_FACTOR": 4}


def test_unknown_table_is_a_driver_error(fake_sde):
    d, _, _ = fake_sde
    with pytest.raises(DriverError, match="no table"):
        d.read_table("FfsIngress.nope")
