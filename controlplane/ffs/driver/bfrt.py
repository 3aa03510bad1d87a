"""The Driver for Tofino (hardware or tofino-model) over BF-Runtime gRPC, via the SDE's bfrt_grpc.

`bfrt_grpc` ships with the SDE and is imported only when this driver is created; without it the
driver says where it looked. Names are the P4 names of ffs.p4names (BF-RT resolves them under
`pipe.`); a batch is one WriteRequest with ROLLBACK_ON_ERROR, so it applies whole or not at all.
Counters and registers are synced once per read (`Sync`, then a software read with
`from_hw=False`) and summed over pipes. Building one request across tables uses the client
module's own request builders (`_Table._entry_write_req_make`, `_set_table_data`, `_cpy_target`)
because its public calls send one request per table.
"""

from __future__ import annotations

import glob
import importlib
import os
import sys
import time
from typing import Any, Iterable, Sequence

from ffs import p4names as N
from ffs.driver.base import (
    CounterValue,
    Driver,
    DriverError,
    Exact,
    LpfSpec,
    Lpm,
    Range,
    TableEntry,
    Ternary,
    Update,
)

PORT_MD_ALIASES = (N.PORT_METADATA.name, "$PORT_METADATA")
COUNTER_WRAP = 1 << 64


def sde_python_paths(sde_install: str) -> list[str]:
    """Where an SDE installs bfrt_grpc (lib/python3.X/site-packages/{tofino,tofino/bfrt_grpc})."""
    paths = []
    for site in sorted(glob.glob(os.path.join(sde_install, "lib", "python3*", "site-packages"))):
        paths += [site, os.path.join(site, "tofino"), os.path.join(site, "tofino", "bfrt_grpc")]
    return paths


def import_bfrt_grpc() -> Any:
    try:
        return importlib.import_module("bfrt_grpc.client")
    except ImportError:
        pass
    sde = os.environ.get("SDE_INSTALL")
    if not sde:
        raise DriverError("the tofino target needs the SDE's bfrt_grpc: set SDE_INSTALL (e.g. $SDE/install)")
    paths = sde_python_paths(sde)
    sys.path[:0] = [p for p in paths if p not in sys.path]
    try:
        return importlib.import_module("bfrt_grpc.client")
    except ImportError as e:
        tried = ", ".join(paths) or f"{sde}/lib/python3*/site-packages"
        raise DriverError(f"cannot import bfrt_grpc from SDE_INSTALL={sde} (looked in {tried}): {e}") from None


class BfrtDriver(Driver):
    def __init__(self, address: str = "localhost:50052", device_id: int = 0, client_id: int = 1,
                 program: str = N.P4_NAME) -> None:
        self.gc = import_bfrt_grpc()
        self.address = address
        self.device_id = device_id
        self.client_id = client_id
        self.program = program
        self.iface: Any = None
        self.info: Any = None
        self.target = self.gc.Target(device_id=device_id, pipe_id=0xFFFF)
        self._program_id = ""
        self._binds = 0

    # -- life cycle ----------------------------------------------------------------------------
    def connect(self, timeout_s: float = 120.0) -> None:
        """Retry while bf_switchd starts (it can take a minute or two on tofino-model)."""
        deadline = time.monotonic() + timeout_s
        last = ""
        while True:
            try:
                self.iface = self.gc.ClientInterface(self.address, client_id=self.client_id, device_id=self.device_id)
                self.info = self.iface.bfrt_info_get(self.program)
                self.iface.bind_pipeline_config(self.program)
                self._binds += 1
                self._program_id = f"{self.program}@{time.time():.6f}#{self._binds}"
                return
            except Exception as e:  # noqa: BLE001 - grpc and bfrt raise many kinds while starting
                last = str(e).splitlines()[0] if str(e) else type(e).__name__
                self.close()
            if time.monotonic() >= deadline:
                raise DriverError(f"BF-Runtime at {self.address} not ready within {timeout_s:g} s: {last}")
            time.sleep(1.0)

    def close(self) -> None:
        if self.iface is not None:
            try:
                self.iface.tear_down_stream()
            except Exception:  # noqa: BLE001 - closing a dead stream
                pass
            self.iface = None

    def program_id(self) -> str:
        """One id per binding. BF-RT offers no id of a loaded pipeline, so every (re)connection -- after
        a dropped stream, a switchd restart or a reload -- counts as a new program, and the agent
        re-applies its whole state (which is idempotent)."""
        self._require()
        return self._program_id

    def _require(self) -> None:
        if self.iface is None or self.info is None:
            raise DriverError("not connected to BF-Runtime")

    def _table(self, name: str) -> Any:
        self._require()
        if name in PORT_MD_ALIASES:
            name = N.PORT_METADATA.name
        try:
            return self.info.table_get(name)
        except Exception as e:  # noqa: BLE001
            raise DriverError(f"BF-Runtime has no table {name!r}: {e}") from None

    def _call(self, what: str, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except DriverError:
            raise
        except Exception as e:  # noqa: BLE001 - BfruntimeReadWriteRpcException and grpc errors
            raise DriverError(f"{what}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None

    # -- tables --------------------------------------------------------------------------------
    def _key(self, t: Any, entry: TableEntry) -> Any:
        kt = []
        for name, v in entry.key.items():
            if isinstance(v, Exact):
                kt.append(self.gc.KeyTuple(name, v.value))
            elif isinstance(v, Lpm):
                kt.append(self.gc.KeyTuple(name, v.value, prefix_len=v.prefix_len))
            elif isinstance(v, Ternary):
                kt.append(self.gc.KeyTuple(name, v.value, v.mask))
            elif isinstance(v, Range):
                kt.append(self.gc.KeyTuple(name, low=v.low, high=v.high))
        if any(isinstance(v, (Ternary, Range)) for v in entry.key.values()):
            kt.append(self.gc.KeyTuple("$MATCH_PRIORITY", entry.priority))
        return t.make_key(kt)

    def _data(self, t: Any, entry: TableEntry) -> Any:
        data = [self.gc.DataTuple(k, v) for k, v in entry.params.items()]
        if entry.action is None:
            return t.make_data(data)
        return t.make_data(data, _qualified(entry))

    def write(self, updates: Sequence[Update]) -> None:
        """The whole batch as ONE WriteRequest with atomicity ROLLBACK_ON_ERROR: bf_switchd applies
        it in one transaction and undoes every update of it if one fails."""
        self._require()
        if not updates:
            return
        pb = self.gc.bfruntime_pb2
        req = pb.WriteRequest()
        self.gc._cpy_target(req, self.target)
        req.atomicity = pb.WriteRequest.ROLLBACK_ON_ERROR
        kinds = {"insert": pb.Update.INSERT, "modify": pb.Update.MODIFY, "delete": pb.Update.DELETE}
        for u in updates:
            t = self._table(u.entry.table)
            if u.kind == "set_default":
                data = self._data(t, u.entry)
                up = req.updates.add()
                up.type = pb.Update.MODIFY
                te = up.entity.table_entry
                te.table_id = t.info.id_get()
                te.is_default_entry = True
                t._set_table_data(te, data.action_name, list(data.field_dict.values()))
            elif u.kind in kinds:
                datas = None if u.kind == "delete" else [self._data(t, u.entry)]
                t._entry_write_req_make(req, [self._key(t, u.entry)], datas, kinds[u.kind])
            else:
                raise DriverError(f"unknown update kind {u.kind!r}")
        self._call(f"batch of {len(updates)} update(s), none applied", self.iface.reader_writer_interface._write, req)

    def read_table(self, table: str) -> list[TableEntry]:
        t = self._table(table)
        out = []
        for data, key in self._call(table, t.entry_get, self.target, None, {"from_hw": False}):
            kd, dd = key.to_dict(), data.to_dict()
            kv = {}
            prio = 0
            for name, v in kd.items():
                if name == "$MATCH_PRIORITY":
                    prio = v["value"]
                elif "prefix_len" in v:
                    kv[name] = Lpm(v["value"], v["prefix_len"])
                elif "mask" in v:
                    kv[name] = Ternary(v["value"], v["mask"])
                elif "low" in v:
                    kv[name] = Range(v["low"], v["high"])
                else:
                    kv[name] = Exact(v["value"])
            action = dd.pop("action_name", None)
            dd.pop("is_default_entry", None)
            out.append(TableEntry(N.PORT_METADATA.name if table in PORT_MD_ALIASES else table, kv, action,
                                  {k: v for k, v in dd.items() if not k.startswith("$")}, prio))
        return sorted(out, key=lambda e: (sorted((k, repr(v)) for k, v in e.key.items()), e.priority))

    def read_default(self, table: str) -> TableEntry:
        t = self._table(table)
        for data, _ in self._call(table, t.default_entry_get, self.target, {"from_hw": False}):
            dd = data.to_dict()
            action = dd.pop("action_name", None)
            dd.pop("is_default_entry", None)
            return TableEntry(table, {}, action, dict(dd))
        raise DriverError(f"{table}: no default entry")

    def clear_table(self, table: str) -> None:
        t = self._table(table)
        self._call(table, t.entry_del, self.target)
        if table not in PORT_MD_ALIASES:
            try:
                t.default_entry_reset(self.target)
            except Exception:  # noqa: BLE001 - tables without a settable default
                pass

    # -- counters, registers, LPFs -------------------------------------------------------------
    def _indexed(self, name: str, index_field: str, indices: Iterable[int] | None, sync: str) -> list[tuple[int, dict]]:
        t = self._table(name)
        self._call(name, t.operations_execute, self.target, sync)
        keys = None if indices is None else [t.make_key([self.gc.KeyTuple(index_field, i)]) for i in indices]
        out = []
        for data, key in self._call(name, t.entry_get, self.target, keys, {"from_hw": False}):
            out.append((key.to_dict()[index_field]["value"], data.to_dict()))
        return out

    def read_counters(self, name: str, indices: Iterable[int] | None = None) -> dict[int, CounterValue]:
        """64-bit packets and bytes per index; a value given per pipe is summed (modulo 2^64, the
        width the agent takes differences in)."""
        return {
            i: CounterValue(_pipe_sum(d.get("$COUNTER_SPEC_PKTS", 0)) % COUNTER_WRAP, _pipe_sum(d.get("$COUNTER_SPEC_BYTES", 0)) % COUNTER_WRAP)
            for i, d in self._indexed(name, "$COUNTER_INDEX", indices, "Sync")
        }

    def reset_counters(self, name: str) -> None:
        t = self._table(name)
        self._call(name, t.entry_del, self.target)  # clears every index to zero

    def read_registers(self, name: str, indices: Iterable[int] | None = None) -> dict[int, int]:
        field = f"{name}.f1"
        out = {}
        for i, d in self._indexed(name, "$REGISTER_INDEX", indices, "Sync"):
            v = d.get(field, next((x for k, x in d.items() if not k.startswith("$")), 0))
            out[i] = _pipe_sum(v)  # one value per pipe: a pair lives in the pipe of its ingress port
        return out

    def write_register(self, name: str, index: int, value: int) -> None:
        t = self._table(name)
        key = t.make_key([self.gc.KeyTuple("$REGISTER_INDEX", index)])
        self._call(name, t.entry_add, self.target, [key], [t.make_data([self.gc.DataTuple(f"{name}.f1", value)])])

    def set_lpf_spec(self, name: str, indices: Iterable[int], spec: LpfSpec) -> None:
        t = self._table(name)
        idx = list(indices)
        keys = [t.make_key([self.gc.KeyTuple("$LPF_INDEX", i)]) for i in idx]
        data = t.make_data([
            self.gc.DataTuple("$LPF_SPEC_TYPE", str_val=spec.kind),
            self.gc.DataTuple("$LPF_SPEC_GAIN_TIME_CONSTANT_NS", float_val=spec.gain_time_constant_ns),
            self.gc.DataTuple("$LPF_SPEC_DECAY_TIME_CONSTANT_NS", float_val=spec.decay_time_constant_ns),
            self.gc.DataTuple("$LPF_SPEC_OUT_SCALE_DOWN_FACTOR", spec.out_scale_down),
        ])
        self._call(name, t.entry_add, self.target, keys, [data] * len(keys))

    def read_lpf_spec(self, name: str, index: int) -> LpfSpec:
        t = self._table(name)
        key = t.make_key([self.gc.KeyTuple("$LPF_INDEX", index)])
        for data, _ in self._call(name, t.entry_get, self.target, [key], {"from_hw": False}):
            d = data.to_dict()
            return LpfSpec(d["$LPF_SPEC_TYPE"], float(d["$LPF_SPEC_GAIN_TIME_CONSTANT_NS"]),
                           float(d["$LPF_SPEC_DECAY_TIME_CONSTANT_NS"]), int(d["$LPF_SPEC_OUT_SCALE_DOWN_FACTOR"]))
        raise DriverError(f"{name}: no LPF at index {index}")


def _pipe_sum(v: Any) -> int:
    """BF-RT returns register cells (and, on some SDEs, counters) as a list with one value per pipe."""
    return int(sum(int(x) for x in v)) if isinstance(v, (list, tuple)) else int(v)


def _qualified(entry: TableEntry) -> str:
    """BF-RT action names are control-qualified: FfsIngress.pair_map.set_pair."""
    a = entry.action or ""
    if "." in a:
        return a
    return f"{entry.table.rsplit('.', 1)[0]}.{a}"
