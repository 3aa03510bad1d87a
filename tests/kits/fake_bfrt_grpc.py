# SPDX-License-Identifier: Apache-2.0
"""A SMALL FAKE of the SDE's `bfrt_grpc.client`: the boundary these tests cannot reach without an SDE.

tests/agent/test_bfrt_driver.py checks BfrtDriver's mapping onto the client against it where no SDE is
installed; tests/sde/test_bfrt_live.py runs the same driver paths against the real client and bf_switchd.

What it models: the client module's surface that the driver uses (ClientInterface, KeyTuple,
DataTuple, Target, bfruntime_pb2, the request builders of a table), and bf_switchd's Write as one
transaction per request (ROLLBACK_ON_ERROR restores every table on a failure). It records every
request, so tests check names, key tuples, data tuples, one-request batches, per-pipe sums and
counter wrap. Where the real client is awkward the fake is too: reads are generators that raise the
switch's error while they are iterated, errors print as a bare "Error(s):" with the reason in
sub-errors, DataTuple refuses an int for a float field, the gRPC stub takes a `timeout`, the module
logs through its own StreamHandler, and $PORT_METADATA reads back the compiler's padding field.
`$PORT` keeps the ports added (an enabled one comes up) and a read of given keys returns those
entries ($PORT_STR_INFO). ClientInterface fails its first two connects, as while bf_switchd starts.

What it does not model: the wire (no gRPC channel, no protobuf encoding), BfRt info JSON and its
type checks beyond the float fields, match-kind semantics of a lookup (entries are a dict by key),
the stream channel and its notifications, idle timeouts, table sizes and any packet path. Those are
the live tests' job.
"""

import logging
import sys
import types

from ffs.core import p4names


class KeyTuple:
    def __init__(self, name, value=None, mask=None, prefix_len=None, low=None, high=None):
        for v in (value, mask, low, high):
            if v is not None and not isinstance(v, (int, bytearray, str)):
                raise TypeError("Expected type int/long, ByteArray or a string")  # the client's words
        self.name, self.value, self.mask, self.prefix_len, self.low, self.high = (
            name,
            value,
            mask,
            prefix_len,
            low,
            high,
        )


class DataTuple:
    """The client's type checks, with its messages."""

    def __init__(self, name, val=None, float_val=None, str_val=None, bool_val=None):
        if val is not None and not isinstance(val, (int, bytearray, str)):
            raise TypeError(f"Please pass an int/long or bytearray. you passed {type(val)}")
        if val is None and float_val is not None and not isinstance(float_val, float):
            raise TypeError("Please pass a float for float_val")
        if val is None and float_val is None and str_val is not None and not isinstance(str_val, str):
            raise TypeError("Please pass a string for str_val")
        if bool_val is not None and not isinstance(bool_val, bool):
            raise TypeError("Please pass a bool for bool_val")
        self.name = name
        self.val = next(v for v in (val, float_val, str_val, bool_val) if v is not None)


# --- the client's errors: a gRPC error, wrapped; str() is a bare "Error(s):" plus one line per sub-error


class StatusCode(types.SimpleNamespace):
    pass


class FakeRpcError(Exception):
    """A grpc.RpcError as the client sees it: code(), details(), and per-update p4 errors
    (canonical code, message) for UNKNOWN, which is how bf_switchd reports a failed batch."""

    CODES = {"UNKNOWN": 2, "DEADLINE_EXCEEDED": 4, "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "UNAVAILABLE": 14}

    def __init__(self, code, details, sub_errors=()):
        super().__init__(details)
        self._code, self._details, self.sub_errors = StatusCode(name=code), details, list(sub_errors)

    def code(self):
        return self._code

    def details(self):
        return self._details


class BfruntimeReadWriteRpcException(Exception):
    def __init__(self, grpc_error):
        super().__init__()
        self.grpc_error = grpc_error
        self.errors = [
            (i, types.SimpleNamespace(canonical_code=FakeRpcError.CODES[c], message=m))
            for i, (c, m) in enumerate(grpc_error.sub_errors)
        ]

    def __str__(self):
        names = {v: k for k, v in FakeRpcError.CODES.items()}
        return "Error(s):\n" + "".join(
            f"\t* At index {i}: {names[e.canonical_code]}, '{e.message}'\n" for i, e in self.errors
        )

    def grpc_error_get(self):
        return self.grpc_error

    def sub_errors_get(self):
        return self.errors


def read_field(name, value):
    """A field parsed from a read response: the client builds these without DataTuple's checks
    (register cells come back as one value per pipe)."""
    return types.SimpleNamespace(name=name, val=value)


def batch_error(code, message):
    return FakeRpcError("UNKNOWN", "Write Error Status", [(code, message)])


class Target:
    def __init__(self, device_id=0, pipe_id=0xFFFF):
        self.device_id_, self.pipe_id_ = device_id, pipe_id


class Key:
    def __init__(self, tuples):
        self.field_dict = {t.name: t for t in tuples}

    def frozen(self):
        return tuple((t.name, t.value, t.mask, t.prefix_len) for t in self.field_dict.values())

    def to_dict(self):
        d = {}
        for t in self.field_dict.values():
            v = {"value": t.value}
            if t.mask is not None:
                v["mask"] = t.mask
            if t.prefix_len is not None:
                v["prefix_len"] = t.prefix_len
            d[t.name] = v
        return d


class Data:
    def __init__(self, tuples, action_name=None):
        self.field_dict = {t.name: t for t in tuples}
        self.action_name = action_name

    def to_dict(self):
        d = {t.name: t.val for t in self.field_dict.values()}
        if self.action_name:
            d["action_name"] = self.action_name
        return d


class WriteRequest:
    CONTINUE_ON_ERROR, ROLLBACK_ON_ERROR = 0, 1

    def __init__(self):
        self.atomicity = self.CONTINUE_ON_ERROR
        self.target = None
        self.updates = _Updates()


class _Updates(list):
    def add(self):
        u = types.SimpleNamespace(type=None, entity=types.SimpleNamespace(table_entry=types.SimpleNamespace()))
        self.append(u)
        return u


bfruntime_pb2 = types.SimpleNamespace(
    WriteRequest=WriteRequest, Update=types.SimpleNamespace(INSERT=1, MODIFY=2, DELETE=3)
)


def _cpy_target(req, target):
    req.target = (target.device_id_, target.pipe_id_)


class FakeTable:
    """Table state plus the request builders of bfrt_grpc's _Table (they append to a WriteRequest)."""

    def __init__(self, name, log, table_id):
        self.name, self.log = name, log
        self.info = types.SimpleNamespace(id_get=lambda: table_id)
        self.entries = {}
        self.reads = {}  # what entry_get returns for indexed externs: [(index, data dict)]
        self.fail_insert = False
        self.fail_read: FakeRpcError | None = None  # raised by the Read stream after its first result
        self.rw = None  # the client's reader-writer interface, set by Info.table_get

    def make_key(self, tuples):
        return Key(tuples)

    def make_data(self, tuples, action_name=None):
        return Data(tuples, action_name)

    def _entry_write_req_make(self, req, keys, datas, update_type):
        for k, d in zip(keys, datas or [None] * len(keys), strict=False):
            up = req.updates.add()
            up.type = update_type
            te = up.entity.table_entry
            te.table, te.is_default_entry, te.key, te.data = self, False, k, d

    def _set_table_data(self, te, action_name, fields):
        te.table, te.data = self, Data(fields, action_name)

    def entry_add(self, target, keys, datas):  # used for LPF specs, register writes and $PORT
        self.log.append(("entry_add", self.name, [k.to_dict() for k in keys], [d.to_dict() for d in datas]))
        if self.name == "$PORT":  # a port is held, and its link comes up once it is enabled
            for k, d in zip(keys, datas, strict=False):
                self.entries[k.frozen()] = (
                    k,
                    Data([*d.field_dict.values(), read_field("$PORT_UP", d.to_dict()["$PORT_ENABLE"])]),
                )

    def entry_mod(self, target, keys, datas):  # $PORT: enable; the pktgen tables
        self.log.append(("entry_mod", self.name, [k.to_dict() for k in keys], [d.to_dict() for d in datas]))
        if ".pktgen." in self.name:  # a fixed table: every key exists, a modify sets the fields it names
            for k, d in zip(keys, datas, strict=False):
                held = self.entries.get(k.frozen(), (k, Data([])))[1]
                fields = held.to_dict() | d.to_dict()
                action = fields.pop("action_name", None)
                self.entries[k.frozen()] = (k, Data([read_field(n, v) for n, v in fields.items()], action))
            return
        for k, d in zip(keys, datas, strict=False):
            held = self.entries[k.frozen()][1].to_dict() | d.to_dict()
            held["$PORT_UP"] = held["$PORT_ENABLE"]
            self.entries[k.frozen()] = (k, Data([read_field(n, v) for n, v in held.items()]))

    def entry_del(self, target, keys=None):
        self.log.append(("entry_del", self.name, keys))
        if keys is None:
            self.entries.clear()
        for k in keys or ():
            self.entries.pop(k.frozen(), None)

    def default_entry_reset(self, target):
        self.log.append(("default_reset", self.name))

    def operations_execute(self, target, op):
        self.log.append(("op", self.name, op))

    def entry_get(self, target, keys=None, flags=None):
        """As the client's: the Read RPC returns a stream, and its error comes while iterating."""
        stream = self.rw._read(("read", self.name))
        return self._parse(stream, self._results(keys, flags))

    def default_entry_get(self, target, flags=None):
        stream = self.rw._read(("read-default", self.name))
        default = getattr(self, "default", None) or Data([], f"{self.name.rsplit('.', 1)[0]}.NoAction")
        if self.name.endswith(".dev.device_configuration"):  # the device's one entry
            default = Data([read_field("num_pipes", self.pipes)])
        return self._parse(stream, iter([(default, None)]))

    def _parse(self, stream, results):
        try:
            for n, item in enumerate(results):
                if n == 1 and self.fail_read is not None:
                    raise self.fail_read
                next(stream, None)
                yield item
            if self.fail_read is not None:
                raise self.fail_read
        except FakeRpcError as e:
            raise BfruntimeReadWriteRpcException(e) from e

    def _results(self, keys, flags):
        self.log.append(("get", self.name, flags))
        if keys and not self.reads and not self.entries:  # indexed cells never written read as zero
            for k in keys:
                (t,) = k.field_dict.values()
                zero = (
                    {"$COUNTER_SPEC_BYTES": 0, "$COUNTER_SPEC_PKTS": 0}
                    if t.name == "$COUNTER_INDEX"
                    else {f"{self.name}.f1": [0, 0]}
                )
                yield Data([read_field(n, v) for n, v in zero.items()]), k
            return
        if keys and self.entries:  # given keys of a table that holds entries ($PORT_STR_INFO): those
            for k in keys:
                if k.frozen() in self.entries:
                    yield self.entries[k.frozen()][1], k
            return
        if self.reads:
            field = "$COUNTER_INDEX" if "$COUNTER_SPEC_BYTES" in next(iter(self.reads.values())) else "$REGISTER_INDEX"
            for i, d in self.reads.items():
                yield Data([read_field(k, v) for k, v in d.items()]), Key([KeyTuple(field, i)])
            return
        for k, d in self.entries.values():
            if self.name == p4names.PORT_METADATA.name:  # bf-p4c pads the port-metadata header to 64 bits
                d = Data(list(d.field_dict.values()) + [read_field("pad", 0)], d.action_name)
            yield d, k


class Stub:
    """The gRPC stub: records the deadline (`timeout`) of every call."""

    def __init__(self, server):
        self.server, self.timeouts = server, []

    def Write(self, req, metadata=None, timeout=None):
        self.timeouts.append(("Write", timeout))
        return self.server.write(req)

    def Read(self, req, metadata=None, timeout=None):
        self.timeouts.append(("Read", timeout))
        return iter(range(1 << 30))


class ReaderWriter:
    """The client's _ReaderWriterInterface: the stub's gRPC errors become BfruntimeReadWriteRpcException."""

    def __init__(self, stub):
        self.stub = stub

    def _write(self, req, metadata=None):
        try:
            return self.stub.Write(req, metadata=metadata)
        except FakeRpcError as e:
            raise BfruntimeReadWriteRpcException(e) from e

    def _read(self, req, metadata=None):
        return self.stub.Read(req, metadata=metadata)

    @property
    def requests(self):
        return self.stub.server.requests


class Server:
    """bf_switchd's Write: applies a request's updates in order; with ROLLBACK_ON_ERROR a failure
    restores every table as it was (it runs a batch in one transaction). Errors are UNKNOWN with
    one p4 error per failed update, as bf_switchd sends them."""

    def __init__(self, log):
        self.log, self.requests = log, []

    def write(self, req):
        self.requests.append(req)
        tables = {id(u.entity.table_entry.table): u.entity.table_entry.table for u in req.updates}
        saved = {k: dict(t.entries) for k, t in tables.items()}
        try:
            for u in req.updates:
                te = u.entity.table_entry
                t = te.table
                if te.is_default_entry:
                    t.default = te.data
                elif u.type == bfruntime_pb2.Update.INSERT:
                    if t.fail_insert or te.key.frozen() in t.entries:
                        raise batch_error("ALREADY_EXISTS", f"Table Add failed table:pipe.{t.name} Already exists")
                    t.entries[te.key.frozen()] = (te.key, te.data)
                elif u.type == bfruntime_pb2.Update.MODIFY:
                    if te.key.frozen() not in t.entries:
                        raise batch_error(
                            "NOT_FOUND", f"Table Entry modify failed table:pipe.{t.name} Object not found"
                        )
                    t.entries[te.key.frozen()] = (te.key, te.data)
                else:
                    t.entries.pop(te.key.frozen())
        except FakeRpcError:
            if req.atomicity == WriteRequest.ROLLBACK_ON_ERROR:
                for k, t in tables.items():
                    t.entries = saved[k]
            raise


def install(monkeypatch, chip="tf1", pipes=2):
    """Put the fake in sys.modules as `bfrt_grpc` and `bfrt_grpc.client` for one test; returns the
    request log and the tables by name (created on first use by `bfrt_info_get(...).table_get`).
    The device is a Tofino of `chip` ("tf1", "tf2", or None: no packet generator) with `pipes`
    pipes: its fixed tables (pktgen, dev.device_configuration) are listed from the start."""
    log, tables, connects = [], {}, []
    fixed = (
        [f"{chip}.pktgen.{t}" for t in ("port_cfg", "app_cfg", "pkt_buffer")] + [f"{chip}.dev.device_configuration"]
        if chip
        else []
    )

    server = Server(log)

    class Info:
        def __init__(self, rw):
            self.rw = rw

        def table_get(self, name):
            if name == "FfsIngress.nope":
                raise KeyError(name)
            if (".pktgen." in name or ".dev." in name) and name not in fixed:
                raise KeyError(name)  # the client's table_dict: another chip's fixed tables are not there
            t = tables.setdefault(name, FakeTable(name, log, len(tables) + 1))
            t.rw, t.pipes = self.rw, pipes
            return t

        def table_name_list_get(self):
            return sorted(set(tables) | set(fixed))

    class ClientInterface:
        def __init__(self, address, client_id, device_id):
            connects.append(address)
            if len(connects) < 3:
                raise RuntimeError("Failed to subscribe to server at localhost:50052")  # switchd still starting
            self.stub = Stub(server)
            self.reader_writer_interface = ReaderWriter(self.stub)
            log.append(("connect", address, client_id))

        def bfrt_info_get(self, name):
            return Info(self.reader_writer_interface)

        def bind_pipeline_config(self, name):
            log.append(("bind", name))

        def tear_down_stream(self):
            log.append(("teardown",))

    client = types.ModuleType("bfrt_grpc.client")
    client_log = logging.getLogger("bfruntime_grpc_client")  # the client adds a raw handler on import
    monkeypatch.setattr(client_log, "handlers", [logging.StreamHandler()])
    monkeypatch.setattr(client_log, "level", logging.INFO)
    client.ClientInterface, client.KeyTuple, client.DataTuple, client.Target = (
        ClientInterface,
        KeyTuple,
        DataTuple,
        Target,
    )
    client.bfruntime_pb2, client._cpy_target = bfruntime_pb2, _cpy_target
    pkg = types.ModuleType("bfrt_grpc")
    pkg.client = client
    monkeypatch.setitem(sys.modules, "bfrt_grpc", pkg)
    monkeypatch.setitem(sys.modules, "bfrt_grpc.client", client)
    return log, tables
