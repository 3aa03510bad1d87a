# SPDX-License-Identifier: Apache-2.0
"""The Driver for Tofino (hardware or tofino-model) over BF-Runtime gRPC, via the SDE's bfrt_grpc.

`bfrt_grpc` ships with the SDE and is imported only when this driver is created; without it the
driver says where it looked. Names are the P4 names of ffs.core.p4names (BF-RT resolves them under
`pipe.`); a batch is one WriteRequest with ROLLBACK_ON_ERROR, so it applies whole or not at all.
Counters and registers are read in one of two ways and summed over pipes: a few indices straight
from the hardware (`from_hw=True`), many indices or a whole table by a `Sync` of the table and then
a software read (`from_hw=False`); the switch-over is `hw_read_max_indices`. Building one request across tables uses the
client
module's own request builders (`_Table._entry_write_req_make`, `_set_table_data`, `_cpy_target`)
because its public calls send one request per table.

The real client raises in places a caller does not expect, and every one of them is turned into a
one-line DriverError here: a Read is a server stream, so its errors surface while the results are
iterated (every read is drained inside the wrapping); a switch error prints as a bare "Error(s):"
with the reason on its sub-errors or its gRPC status (both are extracted); DataTuple/make_key/
make_data validate types client-side ("Please pass a float"). Every RPC carries a deadline, so a
hung bf_switchd costs one deadline, not the agent.
"""

from __future__ import annotations

import contextlib
import glob
import importlib
import importlib.metadata
import importlib.util
import logging
import operator
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from ffs.core import p4names
from ffs.core.constants import PKTGEN_PORT, PKTGEN_PORT_TOFINO2, TIMER_APP_ID, TIMER_HEADER_LEN
from ffs.core.entries import CounterValue, Exact, KeyValue, LpfSpec, Lpm, Range, TableEntry, Ternary, TimerSpec, Update
from ffs.core.ports import FRAME_LIMIT_MAX, PortSpec, PortState
from ffs.driver.base import Driver, DriverError, TmPortCounts, pipe_counter, pipe_sum

PORT_MD_ALIASES = (p4names.PORT_METADATA.name, "$PORT_METADATA")
PORT_MD_FIELDS = frozenset(name for name, _ in p4names.PORT_METADATA.fields)
CLIENT_LOGGER = "bfruntime_grpc_client"  # the client module's own logger (it adds a raw StreamHandler)
# the SDE's fixed packet-generator tables (share/bf_rt_shared/bf_rt_pktgen_tf{1,2}.json) per chip,
# with the pipe-local port the generator's packets enter on
PKTGEN_CHIPS = (("tf1", PKTGEN_PORT), ("tf2", PKTGEN_PORT_TOFINO2))
# the shortest packet each chip's driver generates, the 6-byte header included (Tofino 2's refuses a
# pkt_len below 59: "Packet length, 58, is too small. Must be at least 59.")
PKTGEN_MIN_LEN = {"tf1": TIMER_HEADER_LEN + 1, "tf2": TIMER_HEADER_LEN + 59}
TIMER_ACTION = "trigger_timer_periodic"
TIMER_BUFFER_OFFSET = 0  # where the timer packet's bytes lie in the generator's buffer

# google.rpc.Code, the canonical codes of a BF-RT sub-error (fixed by the gRPC spec)
CANONICAL_CODES = (
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)


def sde_python_paths(sde_install: str) -> list[str]:
    """Where an SDE installs bfrt_grpc: lib{,64}/python3.X/site-packages{,/tofino,/tofino/bfrt_grpc}."""
    paths = []
    for lib in ("lib", "lib64"):
        for site in sorted(glob.glob(os.path.join(sde_install, lib, "python3*", "site-packages"))):
            paths += [site, os.path.join(site, "tofino"), os.path.join(site, "tofino", "bfrt_grpc")]
    return paths


def quiet_client_logging() -> None:
    """The client logs through its own StreamHandler at INFO ("Subscribe attempt #1", "Binding with
    p4_name ..."): raw lines in the middle of the agent's key=value/JSON stderr. Drop that handler and
    keep warnings, which then go through the agent's own formatter."""
    lg = logging.getLogger(CLIENT_LOGGER)
    for h in list(lg.handlers):
        lg.removeHandler(h)
    lg.setLevel(logging.WARNING)


PB_PYTHON = "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"


def client_dependency(module: str) -> str | None:
    """The package of a module the SDE's client imports besides grpcio (the [tofino] extra's)."""
    if module.startswith("google.protobuf"):
        return "protobuf"
    if module.startswith("google"):
        return "googleapis-common-protos"
    return "six" if module == "six" else None


def protobuf_version() -> tuple[int, int] | None:
    """The installed protobuf's (major, minor), read without importing it; None if there is none."""
    try:
        m = re.match(r"(\d+)\.(\d+)", importlib.metadata.version("protobuf"))
    except importlib.metadata.PackageNotFoundError:
        return None
    return (int(m.group(1)), int(m.group(2))) if m else None


def old_style_generated(pb2_text: str) -> bool:
    """Code from a protoc before 3.20 (Intel's SDE 9.x) builds its descriptors itself
    (`DESCRIPTOR = _descriptor.FileDescriptor(...)`), which protobuf's C implementations (4.21+)
    refuse: "Descriptors cannot be created directly". Newer code adds a serialized file to a pool."""
    return re.search(r"^DESCRIPTOR\s*=\s*_descriptor\.FileDescriptor\(", pb2_text, re.M) is not None


def prepare_protobuf_for_client() -> None:
    """Let an SDE's old-style bfruntime_pb2.py load with the protobuf this environment has: a
    protobuf of 4.21 or later loads it only in its pure-Python implementation, which the agent then
    selects (before protobuf is first imported) and says so once. The parsing is slower, which the
    agent's few messages per period bear; regenerating the client, or protobuf<3.21, avoids it."""
    if "bfrt_grpc.client" in sys.modules:
        return  # loaded already (a stand-in, or an earlier driver)
    try:
        spec = importlib.util.find_spec("bfrt_grpc")
    except (ImportError, ValueError):
        return
    pb2 = (
        next(
            (
                Path(d, "bfruntime_pb2.py")
                for d in (spec.submodule_search_locations or [])
                if Path(d, "bfruntime_pb2.py").is_file()
            ),
            None,
        )
        if spec is not None
        else None
    )
    version = protobuf_version()
    if pb2 is None or version is None or version < (4, 21) or os.environ.get(PB_PYTHON) == "python":
        return
    try:
        if not old_style_generated(pb2.read_text(errors="replace")):
            return
    except OSError:
        return
    shown = ".".join(map(str, version))
    if "google.protobuf" in sys.modules:
        from google.protobuf.internal import api_implementation

        if api_implementation.Type() == "python":
            return
        raise DriverError(
            f"the SDE's {pb2} was generated by a protoc older than 3.20, which protobuf {shown} loads only in its "
            "pure-Python implementation, and protobuf is already loaded here: start the agent with "
            f"{PB_PYTHON}=python, "
            "or install protobuf<3.21 beside it"
        )
    os.environ[PB_PYTHON] = "python"
    logging.getLogger("ffs.driver.bfrt").warning(
        "the SDE's %s was generated by a protoc older than 3.20, which protobuf %s loads only in its pure-Python "
        "implementation: using it (%s=python; slower parsing). To avoid it, regenerate the SDE's client with a newer "
        "grpcio-tools, or install protobuf<3.21",
        pb2,
        shown,
        PB_PYTHON,
    )


def _import_client() -> Any:
    prepare_protobuf_for_client()
    try:
        return importlib.import_module("bfrt_grpc.client")
    except TypeError as e:
        if "Descriptors cannot be created directly" not in str(e):
            raise
        raise DriverError(
            "the SDE's bfrt_grpc was generated by a protoc older than protobuf "
            f"{'.'.join(map(str, protobuf_version() or ()))} accepts: start "
            f"the agent with {PB_PYTHON}=python, or install protobuf<3.21 beside it"
        ) from None


def import_bfrt_grpc() -> Any:
    """The SDE's client. Its directories are APPENDED to sys.path: an SDE's site-packages also holds
    the (often older) grpcio/protobuf it was built with, which must not shadow the agent's own."""
    try:
        gc = _import_client()
    except ImportError:
        sde = os.environ.get("SDE_INSTALL")
        if not sde:
            raise DriverError(
                "the tofino target needs the SDE's bfrt_grpc: set SDE_INSTALL (e.g. $SDE/install)"
            ) from None
        paths = sde_python_paths(sde)
        sys.path.extend(p for p in paths if p not in sys.path)
        try:
            gc = _import_client()
        except ImportError as e:
            tried = ", ".join(paths) or f"{sde}/lib{{,64}}/python3*/site-packages"
            missing = client_dependency(e.name or "")
            hint = (
                (
                    f"; the client needs {missing}: pip install 'ffs-tofino[tofino]' (protobuf, "
                    "googleapis-common-protos, six) "
                    "into the agent's environment"
                )
                if missing
                else ""
            )
            raise DriverError(
                f"cannot import bfrt_grpc from SDE_INSTALL={sde} (looked in {tried}): {e}{hint}"
            ) from None
    quiet_client_logging()
    return gc


def error_reason(e: BaseException) -> str:
    """One line saying why the switch (or the client) refused. The client's exceptions print as a
    bare "Error(s):" line: the reason is on their sub-errors (per update of a batch) or, for
    anything but UNKNOWN, on the gRPC status; when the client fails while building its own
    exception ("No binary details field") the gRPC error is the one it was handling."""
    parts: list[str] = []
    subs = getattr(e, "sub_errors_get", None)
    for idx, err in (subs() if callable(subs) else None) or []:
        code = getattr(err, "canonical_code", None)
        name = CANONICAL_CODES[code] if isinstance(code, int) and 0 <= code < len(CANONICAL_CODES) else str(code)
        parts.append(f"entry {idx}: {name} {getattr(err, 'message', '')}".strip())
    if parts:
        return "; ".join(parts)
    get_grpc = getattr(e, "grpc_error_get", None)
    rpc = get_grpc() if callable(get_grpc) else None
    if rpc is None and callable(getattr(e, "code", None)):
        rpc = e  # a bare grpc.RpcError
    if rpc is None and e.__context__ is not None and e.__context__ is not e:
        inner = error_reason(e.__context__)
        if inner:
            return inner
    if rpc is not None:
        try:
            code = rpc.code()
            details = rpc.details() or ""
            return f"{getattr(code, 'name', code)}: {details}".strip().rstrip(":").replace("\n", " ")
        except Exception:  # noqa: BLE001 - not a call-side gRPC error after all
            pass
    text = str(e)
    if len(e.args) > 1 and isinstance(e.args[0], str) and "%" in e.args[0]:
        try:  # the client raises RuntimeError("Failed to subscribe to server at %s", addr)
            text = e.args[0] % e.args[1:]
        except (TypeError, ValueError):
            pass
    lines = [ln.strip(" \t*") for ln in text.splitlines() if ln.strip(" \t*") and ln.strip() != "Error(s):"]
    return "; ".join(lines) if lines else type(e).__name__


class _DeadlineStub:
    """The client's gRPC stub with a deadline on every unary and server-streaming call (the client
    passes none, so a hung bf_switchd would block a read forever). The bidirectional
    StreamChannel stays open-ended: it lives as long as the binding."""

    def __init__(self, stub: Any, timeout_s: float) -> None:
        self._stub = stub
        self.timeout_s = timeout_s

    @contextlib.contextmanager
    def deadline(self, timeout_s: float) -> Iterator[None]:
        saved, self.timeout_s = self.timeout_s, timeout_s
        try:
            yield
        finally:
            self.timeout_s = saved

    def __getattr__(self, name: str) -> Any:
        rpc = getattr(self._stub, name)
        if name == "StreamChannel" or not callable(rpc):
            return rpc

        def call(*args: Any, **kw: Any) -> Any:
            kw.setdefault("timeout", self.timeout_s)
            return rpc(*args, **kw)

        return call


# what one τ step reads (spec §9): per egress port, never per pair
TAU_STEP_COUNTERS = (
    p4names.OFFERED.name,
    p4names.ADMITTED.name,
    p4names.MALFORMED.name,
    p4names.OFFERED_SHIMS.name,
    p4names.ADMITTED_SHIMS.name,
    p4names.STRIPPED.name,
    p4names.TAG_CHANGED.name,
)


class BfrtDriver(Driver):
    """`rpc_timeout_s` bounds every RPC; a write gets `write_timeout_per_update_s` more per update
    (a node's first install is ~10^4 updates in one request).

    `hw_read_max_indices`: a Sync copies the WHOLE table (4096 cells) from the device, whatever is
    read afterwards, while a read from the hardware costs per cell (docs/benchmarks.md, "The τ loop
    at scale", has both), so up to this many indices are read from the hardware and anything larger
    after a Sync.

    `sync_always`: tables read only after a Sync, however few indices are asked for. By default
    the τ step's per-egress counters (R*_j, A_j, the lies at j, the shims of R*_j and A_j, the
    frames stripped at j, the tags pushed and popped): a Sync costs the same for 3 egress ports
    and for 64, so the step costs the same at 9 pairs and at 4096 (docs/benchmarks.md, "The τ loop
    at scale"); read cell by cell it grew with the number of egress ports."""

    def __init__(
        self,
        address: str = "localhost:50052",
        device_id: int = 0,
        client_id: int = 1,
        program: str = p4names.P4_NAME,
        rpc_timeout_s: float = 10.0,
        write_timeout_per_update_s: float = 0.005,
        hw_read_max_indices: int = 64,
        sync_always: Iterable[str] = TAU_STEP_COUNTERS,
    ) -> None:
        self.gc = import_bfrt_grpc()
        self.address = address
        self.device_id = device_id
        self.client_id = client_id
        self.program = program
        self.rpc_timeout_s = rpc_timeout_s
        self.write_timeout_per_update_s = write_timeout_per_update_s
        self.hw_read_max_indices = hw_read_max_indices
        self.sync_always = frozenset(sync_always)
        self._stub: _DeadlineStub | None = None
        self.iface: Any = None
        self.info: Any = None
        self.target = self.gc.Target(device_id=device_id, pipe_id=0xFFFF)
        self._program_id = ""
        self._binds = 0
        self._timer_app_id = TIMER_APP_ID  # the application set_timer last ran, which read_timer reads

    # -- life cycle ----------------------------------------------------------------------------
    def connect(self, timeout_s: float = 120.0) -> None:
        """Retry while bf_switchd starts (it can take a minute or two on tofino-model)."""
        deadline = time.monotonic() + timeout_s
        last = ""
        while True:
            try:
                self.iface = self.gc.ClientInterface(self.address, client_id=self.client_id, device_id=self.device_id)
                self._stub = _DeadlineStub(self.iface.stub, self.rpc_timeout_s)
                self.iface.stub = self.iface.reader_writer_interface.stub = self._stub
                self.info = self.iface.bfrt_info_get(self.program)
                self.iface.bind_pipeline_config(self.program)
                self._binds += 1
                self._program_id = f"{self.program}@{time.time():.6f}#{self._binds}"
                return
            except Exception as e:  # noqa: BLE001 - grpc and bfrt raise many kinds while starting
                last = error_reason(e)
                if "Failed to subscribe" in last:  # switchd logs the reason; say the two usual ones
                    last += f" (bf_switchd still starting, or client id {self.client_id} held by another client)"
                self.close()
            if time.monotonic() >= deadline:
                raise DriverError(f"BF-Runtime at {self.address} not ready within {timeout_s:.3g} s: {last}")
            time.sleep(1.0)

    def close(self) -> None:
        """Ends the stream, which releases the client id on bf_switchd. The client's own teardown
        joins its receiver thread without a timeout; a hung switchd would hold it forever, so the
        stream is cancelled when it does not end within the RPC deadline."""
        iface, self.iface, self.info = self.iface, None, None
        if iface is None:
            return
        try:
            thread = getattr(iface, "stream_recv_thread", None)
            if thread is not None and getattr(iface, "stream", None) is not None:
                iface.stream_out_q.put(None)
                thread.join(timeout=self.rpc_timeout_s)
                if thread.is_alive():
                    iface.stream.cancel()
            iface.tear_down_stream()
        except Exception:  # noqa: BLE001 - closing a dead stream
            pass

    def program_id(self) -> str:
        """One id per binding. BF-RT offers no id of a loaded pipeline, so every (re)connection -- after
        a dropped stream, a switchd restart or a reload -- counts as a new program, and the agent
        re-applies its whole state (which is idempotent)."""
        self._require()
        return self._program_id

    def program_identity(self) -> str:
        """The bound program's name and the hash of the p4src/ it was compiled from, which `make
        build` installs beside it (`$SDE_INSTALL/share/<chip>pd/<name>/p4src.sha256`, one per chip
        installed): bf_switchd loads the program from there (`run_switchd.sh -p NAME`)."""
        hashes = {}
        for path in sorted(glob.glob(os.path.join(os.environ.get("SDE_INSTALL", "/nonexistent"), "share", "*pd"))):
            try:
                digest = Path(path, self.program, "p4src.sha256").read_text().split()[0][:12]
            except (OSError, IndexError):
                continue
            hashes[os.path.basename(path)[: -len("pd")]] = digest
        if not hashes:
            return f"{self.program} (no p4src.sha256 under $SDE_INSTALL/share/*pd/{self.program})"
        if len(set(hashes.values())) == 1:
            return f"{self.program} p4src {next(iter(hashes.values()))}"
        return f"{self.program} p4src " + ", ".join(f"{h} ({chip})" for chip, h in sorted(hashes.items()))

    def _require(self) -> None:
        if self.iface is None or self.info is None:
            raise DriverError("not connected to BF-Runtime")

    def _table(self, name: str) -> Any:
        self._require()
        if name in PORT_MD_ALIASES:
            name = p4names.PORT_METADATA.name
        try:
            return self.info.table_get(name)
        except Exception as e:  # noqa: BLE001
            raise DriverError(f"BF-Runtime has no table {name!r}: {e}") from None

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        try:
            return fn(*args, **kw)
        except DriverError:
            raise
        except Exception as e:  # noqa: BLE001 - BfruntimeRpcException, grpc errors, client-side checks
            raise DriverError(f"{what}: {error_reason(e)}") from None

    def _read(self, what: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> list[Any]:
        """A read, drained inside the wrapping: the client returns a generator over the Read stream
        and raises the switch's errors (and a passed deadline) only while it is iterated."""
        out: list[Any] = self._call(what, lambda: list(fn(*args, **kw)))
        return out

    # -- tables --------------------------------------------------------------------------------
    def _key(self, t: Any, entry: TableEntry) -> Any:
        """Values are coerced to int: the client accepts int/bytearray only (a numpy integer would
        fail its type checks); a float or a string is refused, not truncated."""
        kt = []
        for name, v in entry.key.items():
            if isinstance(v, Exact):
                kt.append(self.gc.KeyTuple(name, _int(v.value)))
            elif isinstance(v, Lpm):
                kt.append(self.gc.KeyTuple(name, _int(v.value), prefix_len=_int(v.prefix_len)))
            elif isinstance(v, Ternary):
                kt.append(self.gc.KeyTuple(name, _int(v.value), _int(v.mask)))
            elif isinstance(v, Range):
                kt.append(self.gc.KeyTuple(name, low=_int(v.low), high=_int(v.high)))
        if any(isinstance(v, (Ternary, Range)) for v in entry.key.values()):
            kt.append(self.gc.KeyTuple("$MATCH_PRIORITY", _int(entry.priority)))
        return t.make_key(kt)

    def _data(self, t: Any, entry: TableEntry) -> Any:
        data = [self.gc.DataTuple(k, _int(v)) for k, v in entry.params.items()]
        if entry.action is None:
            return t.make_data(data)
        return t.make_data(data, _qualified(entry))

    def _build(self, table: str, fn: Callable[..., Any], *args: Any) -> Any:
        """A key, data or request built client-side: its type and size checks name the table."""
        return self._call(f"{table}: bad value", fn, *args)

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
                data = self._build(u.entry.table, self._data, t, u.entry)
                up = req.updates.add()
                up.type = pb.Update.MODIFY
                te = up.entity.table_entry
                te.table_id = t.info.id_get()
                te.is_default_entry = True
                t._set_table_data(te, data.action_name, list(data.field_dict.values()))
            elif u.kind in kinds:
                datas = None if u.kind == "delete" else [self._build(u.entry.table, self._data, t, u.entry)]
                key = self._build(u.entry.table, self._key, t, u.entry)
                self._build(u.entry.table, t._entry_write_req_make, req, [key], datas, kinds[u.kind])
            else:
                raise DriverError(f"unknown update kind {u.kind!r}")
        assert self._stub is not None
        with self._stub.deadline(self.rpc_timeout_s + self.write_timeout_per_update_s * len(updates)):
            self._call(
                f"batch of {len(updates)} update(s), none applied", self.iface.reader_writer_interface._write, req
            )

    def read_table(self, table: str) -> list[TableEntry]:
        t = self._table(table)
        out = []
        port_md = table in PORT_MD_ALIASES
        for data, key in self._read(table, t.entry_get, self.target, None, {"from_hw": False}):
            kd, dd = key.to_dict(), data.to_dict()
            kv: dict[str, KeyValue] = {}
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
            # $PORT_METADATA also reads back the compiler's padding of the port-metadata header
            params = {k: v for k, v in dd.items() if not k.startswith("$") and (not port_md or k in PORT_MD_FIELDS)}
            out.append(TableEntry(p4names.PORT_METADATA.name if port_md else table, kv, action, params, prio))
        return sorted(out, key=lambda e: (sorted((k, repr(v)) for k, v in e.key.items()), e.priority))

    def read_default(self, table: str) -> TableEntry:
        t = self._table(table)
        for data, _ in self._read(table, t.default_entry_get, self.target, {"from_hw": False}):
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
    def _indexed(
        self, name: str, index_field: str, indices: Iterable[int] | None, sync: str
    ) -> list[tuple[int, dict[str, Any]]]:
        t = self._table(name)
        idx = None if indices is None else list(indices)
        from_hw = idx is not None and len(idx) <= self.hw_read_max_indices and name not in self.sync_always
        if not from_hw:
            self._call(name, t.operations_execute, self.target, sync)
        keys = (
            None
            if idx is None
            else [self._build(name, lambda i=i: t.make_key([self.gc.KeyTuple(index_field, _int(i))])) for i in idx]
        )
        out = []
        for data, key in self._read(name, t.entry_get, self.target, keys, {"from_hw": from_hw}):
            out.append((key.to_dict()[index_field]["value"], data.to_dict()))
        return out

    def read_counters(self, name: str, indices: Iterable[int] | None = None) -> dict[int, CounterValue]:
        """64-bit packets and bytes per index; a value given per pipe is summed (modulo 2^64, the
        width the agent takes differences in)."""
        return {
            i: pipe_counter(d.get("$COUNTER_SPEC_PKTS", 0), d.get("$COUNTER_SPEC_BYTES", 0))
            for i, d in self._indexed(name, "$COUNTER_INDEX", indices, "Sync")
        }

    def reset_counters(self, name: str) -> None:
        t = self._table(name)
        self._call(name, t.entry_del, self.target)  # clears every index to zero

    def read_registers(self, name: str, indices: Iterable[int] | None = None) -> dict[int, int]:
        # one value per pipe: a pair lives in the pipe of its ingress port
        return {i: pipe_sum(v) for i, v in self._register_cells(name, indices).items()}

    def read_register_pipes(self, name: str, indices: Iterable[int] | None = None) -> dict[int, list[int]]:
        return {
            i: [int(x) for x in v] if isinstance(v, (list, tuple)) else [int(v)]
            for i, v in self._register_cells(name, indices).items()
        }

    def _register_cells(self, name: str, indices: Iterable[int] | None) -> dict[int, Any]:
        field = f"{name}.f1"
        return {
            i: d.get(field, next((x for k, x in d.items() if not k.startswith("$")), 0))
            for i, d in self._indexed(name, "$REGISTER_INDEX", indices, "Sync")
        }

    def write_register(self, name: str, index: int, value: int) -> None:
        t = self._table(name)
        key = self._build(name, lambda: t.make_key([self.gc.KeyTuple("$REGISTER_INDEX", int(index))]))
        data = self._build(name, lambda: t.make_data([self.gc.DataTuple(f"{name}.f1", _int(value))]))
        self._call(name, t.entry_add, self.target, [key], [data])

    def set_lpf_spec(self, name: str, indices: Iterable[int], spec: LpfSpec) -> None:
        t = self._table(name)
        idx = list(indices)
        keys = [self._build(name, lambda i=i: t.make_key([self.gc.KeyTuple("$LPF_INDEX", int(i))])) for i in idx]
        # BF-RT types the time constants as float and the client refuses an int ("Please pass a float")
        data = self._build(
            name,
            lambda: t.make_data(
                [
                    self.gc.DataTuple("$LPF_SPEC_TYPE", str_val=str(spec.kind)),
                    self.gc.DataTuple("$LPF_SPEC_GAIN_TIME_CONSTANT_NS", float_val=float(spec.gain_time_constant_ns)),
                    self.gc.DataTuple("$LPF_SPEC_DECAY_TIME_CONSTANT_NS", float_val=float(spec.decay_time_constant_ns)),
                    self.gc.DataTuple("$LPF_SPEC_OUT_SCALE_DOWN_FACTOR", int(spec.out_scale_down)),
                ]
            ),
        )
        self._call(name, t.entry_add, self.target, keys, [data] * len(keys))

    def read_lpf_spec(self, name: str, index: int) -> LpfSpec:
        t = self._table(name)
        key = self._build(name, lambda: t.make_key([self.gc.KeyTuple("$LPF_INDEX", int(index))]))
        for data, _ in self._read(name, t.entry_get, self.target, [key], {"from_hw": False}):
            d = data.to_dict()
            return LpfSpec(
                d["$LPF_SPEC_TYPE"],
                float(d["$LPF_SPEC_GAIN_TIME_CONSTANT_NS"]),
                float(d["$LPF_SPEC_DECAY_TIME_CONSTANT_NS"]),
                int(d["$LPF_SPEC_OUT_SCALE_DOWN_FACTOR"]),
            )
        raise DriverError(f"{name}: no LPF at index {index}")

    # -- the traffic manager's per-port counters (spec §9, a port that drains slower) -------------
    def read_tm_ports(self, dev_ports: Iterable[int]) -> dict[int, TmPortCounts]:
        """`tfN.tm.counter.eg_port`'s `drop_count_packets` and `usage_cells` (times `tfN.tm.cfg`'s
        `cell_size_bytes`) per egress port, the fixed TM tables of the SDE's BF-Runtime."""
        self._require()
        names = set(self._call("BF-Runtime tables", self.info.table_name_list_get))
        chip = next((c for c, _ in PKTGEN_CHIPS if f"{c}.tm.counter.eg_port" in names), None)
        if chip is None:
            raise DriverError("this switch's BF-Runtime has no tf1/tf2.tm.counter.eg_port table")
        cfg = self._table(f"{chip}.tm.cfg")
        rows = self._read(f"{chip}.tm.cfg", cfg.default_entry_get, self.target)
        cell = next((int(d.to_dict()["cell_size_bytes"]) for d, _ in rows), 0)
        rows = self._indexed(f"{chip}.tm.counter.eg_port", "dev_port", dev_ports, "Sync")
        return {
            int(port): TmPortCounts(pipe_sum(d["drop_count_packets"]), pipe_sum(d["usage_cells"]) * cell)
            for port, d in rows
        }

    # -- the packet generator's timer (spec §7.7) -----------------------------------------------
    has_pktgen = True

    def _pktgen(self) -> tuple[str, int]:
        """The chip's fixed pktgen tables' prefix (tf1/tf2) and its generator's pipe-local port."""
        self._require()
        names = set(self._call("BF-Runtime tables", self.info.table_name_list_get))
        for chip, port in PKTGEN_CHIPS:
            if f"{chip}.pktgen.app_cfg" in names:
                return chip, port
        raise DriverError("this switch's BF-Runtime has no packet generator (no tf1/tf2.pktgen tables)")

    def _pipes(self, chip: str) -> int:
        name = f"{chip}.dev.device_configuration"
        t = self._table(name)
        for data, _ in self._read(name, t.default_entry_get, self.target, {"from_hw": False}):
            return int(data.to_dict()["num_pipes"])
        raise DriverError(f"{name}: no device configuration")

    def _modify(self, name: str, keys: list[list[Any]], fields: list[Any], action: str | None = None) -> None:
        """Modify entries of a fixed table (its keys always exist), one data for every key."""
        t = self._table(name)
        ks = [self._build(name, lambda k=k: t.make_key(k)) for k in keys]
        data = self._build(name, lambda: t.make_data(fields, action))
        self._call(name, t.entry_mod, self.target, ks, [data] * len(ks))

    def set_timer(self, timer: TimerSpec | None) -> None:
        """The timer application on the generator's port of every pipe (spec §7.7): configured
        disabled (app_cfg, trigger_timer_periodic: one batch of `packets`, packet_id 0 ..
        packets - 1, every period), the packet's bytes after the 6-byte header the generator
        writes (pkt_buffer), the ports enabled (port_cfg), then the application enabled. None
        disables the application and the ports."""
        chip, local = self._pktgen()
        app, kt = f"{chip}.pktgen.app_cfg", self.gc.KeyTuple
        ports = [[kt("dev_port", pipe << 7 | local)] for pipe in range(self._pipes(chip))]
        if timer is None:
            self._modify(app, [[kt("app_id", self._timer_app_id)]], [self.gc.DataTuple("app_enable", bool_val=False)])
            self._modify(f"{chip}.pktgen.port_cfg", ports, [self.gc.DataTuple("pktgen_enable", bool_val=False)])
            return
        if timer.packet_len < PKTGEN_MIN_LEN[chip]:
            raise DriverError(
                f"{app}: this chip generates packets of {PKTGEN_MIN_LEN[chip]} bytes or more, "
                f"not {timer.packet_len}: give the timer a longer packet_len"
            )
        key = [[kt("app_id", timer.app_id)]]
        self._modify(app, key, self._timer_fields(chip, local, timer), TIMER_ACTION)
        size = timer.packet_len - TIMER_HEADER_LEN
        self._modify(
            f"{chip}.pktgen.pkt_buffer",
            [[kt("pkt_buffer_offset", TIMER_BUFFER_OFFSET), kt("pkt_buffer_size", size)]],
            [self.gc.DataTuple("buffer", bytearray(size))],
        )
        self._modify(f"{chip}.pktgen.port_cfg", ports, [self.gc.DataTuple("pktgen_enable", bool_val=True)])
        self._modify(app, key, [self.gc.DataTuple("app_enable", bool_val=True)], TIMER_ACTION)
        self._timer_app_id = timer.app_id

    def _timer_fields(self, chip: str, local: int, timer: TimerSpec) -> list[Any]:
        d = self.gc.DataTuple
        fields = [
            d("timer_nanosec", timer.period_ns),
            d("app_enable", bool_val=False),
            d("pkt_len", timer.packet_len - TIMER_HEADER_LEN),
            d("pkt_buffer_offset", TIMER_BUFFER_OFFSET),
            d("pipe_local_source_port", local),
            d("increment_source_port", bool_val=False),
            d("batch_count_cfg", 0),
            d("packets_per_batch_cfg", timer.packets - 1),
            d("ibg", 0),
            d("ibg_jitter", 0),
            d("ipg", 0),
            d("ipg_jitter", 0),
        ]
        if chip == "tf2":  # Tofino 2 ties an application to one of the generator's channels (its port)
            fields.append(d("assigned_chnl_id", local))
        return fields

    def read_timer(self) -> TimerSpec | None:
        chip, _ = self._pktgen()
        name = f"{chip}.pktgen.app_cfg"
        t = self._table(name)
        key = self._build(name, lambda: t.make_key([self.gc.KeyTuple("app_id", self._timer_app_id)]))
        for data, _ in self._read(name, t.entry_get, self.target, [key], {"from_hw": False}):
            d = data.to_dict()
            if not d.get("app_enable") or d.get("action_name") != TIMER_ACTION:
                return None
            return TimerSpec(
                int(d["timer_nanosec"]),
                int(d["packets_per_batch_cfg"]) + 1,
                self._timer_app_id,
                int(d["pkt_len"]) + TIMER_HEADER_LEN,
            )
        return None

    # -- front-panel ports ---------------------------------------------------------------------
    has_ports = True

    def port_of(self, fp: str) -> int:
        t = self._table("$PORT_STR_INFO")
        key = self._build("$PORT_STR_INFO", lambda: t.make_key([self.gc.KeyTuple("$PORT_NAME", fp)]))
        try:
            rows = self._read("$PORT_STR_INFO", t.entry_get, self.target, [key], {"from_hw": False})
        except DriverError as e:
            raise DriverError(f"no front-panel port {fp!r} on this switch ($PORT_STR_INFO: {e})") from None
        for data, _ in rows:
            return int(data.to_dict()["$DEV_PORT"])
        raise DriverError(f"no front-panel port {fp!r} on this switch")

    def read_ports(self, dev_ports: Iterable[int]) -> dict[int, PortState]:
        want = set(dev_ports)
        t = self._table("$PORT")
        out = {}
        for data, key in self._read("$PORT", t.entry_get, self.target, None, {"from_hw": False}):
            dev = int(key.to_dict()["$DEV_PORT"]["value"])
            if dev in want:
                d = data.to_dict()
                spec = PortSpec(
                    dev,
                    str(d["$SPEED"]),
                    str(d["$FEC"]),
                    str(d["$AUTO_NEGOTIATION"]),
                    bool(d["$PORT_ENABLE"]),
                    # one limit for both directions, as the agent writes them; the lower decides
                    min(int(d.get("$TX_MTU", FRAME_LIMIT_MAX)), int(d.get("$RX_MTU", FRAME_LIMIT_MAX))),
                )
                out[dev] = PortState(spec, bool(d.get("$PORT_UP", False)))
        return out

    def write_ports(
        self,
        adds: Sequence[PortSpec] = (),
        deletes: Sequence[int] = (),
        enables: Sequence[int] = (),
        limits: Sequence[PortSpec] = (),
    ) -> None:
        t = self._table("$PORT")

        def key(dev: int) -> Any:
            return self._build("$PORT", lambda: t.make_key([self.gc.KeyTuple("$DEV_PORT", _int(dev))]))

        def data(enable: bool, s: PortSpec | None = None) -> Any:
            fields = [self.gc.DataTuple("$PORT_ENABLE", bool_val=enable)]
            if s is not None:
                fields = [
                    self.gc.DataTuple("$SPEED", str_val=s.speed),
                    self.gc.DataTuple("$FEC", str_val=s.fec),
                    self.gc.DataTuple("$AUTO_NEGOTIATION", str_val=s.autoneg),
                    *limit(s),
                ] + fields
            return self._build("$PORT", lambda: t.make_data(fields))

        def limit(s: PortSpec) -> list[Any]:
            return [self.gc.DataTuple(f, _int(s.frame_limit)) for f in ("$TX_MTU", "$RX_MTU")]

        if deletes:
            self._call("$PORT: delete", t.entry_del, self.target, [key(d) for d in deletes])
        if adds:
            self._call(
                "$PORT: add",
                t.entry_add,
                self.target,
                [key(s.dev_port) for s in adds],
                [data(s.enable, s) for s in adds],
            )
        if enables:
            self._call(
                "$PORT: enable", t.entry_mod, self.target, [key(d) for d in enables], [data(True) for _ in enables]
            )
        if limits:
            self._call(
                "$PORT: frame limit",
                t.entry_mod,
                self.target,
                [key(s.dev_port) for s in limits],
                [self._build("$PORT", lambda s=s: t.make_data(limit(s))) for s in limits],
            )


def _int(v: Any) -> int:
    return operator.index(v)


def _qualified(entry: TableEntry) -> str:
    """BF-RT action names are control-qualified: FfsIngress.pair_map.set_pair."""
    a = entry.action or ""
    if "." in a:
        return a
    return f"{entry.table.rsplit('.', 1)[0]}.{a}"
