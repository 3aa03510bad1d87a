# SPDX-License-Identifier: Apache-2.0
"""The software switch's control interface over gRPC (service `ffs.switch.Control`).

Each Driver operation is one unary method whose request and response are JSON documents
(`ffs.driver.wire`). A refused operation returns INVALID_ARGUMENT (or NOT_FOUND) with a one-line
message and changes nothing.

Who may use it (docs/security.md): by default an owner-only Unix socket (mode 0600, bound in a
private directory and renamed into place, so its mode never follows the umask and there is no
moment when others could connect). TCP only when asked, on loopback, with a warning: the service
has no authentication, so anyone on the machine can then change the tables; another address needs
--allow-remote as well. Requests are bounded (`MAX_REQUEST_BYTES`, ffs.core.safeload's depth), at most
`WORKERS` run at once, and large reads release the packet lock between chunks (ffs.switch.runtime),
so that a slow or greedy client cannot stall forwarding.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

import ffs
from ffs.core.safeload import LoadError, loads_json
from ffs.core.unixsock import bind_private
from ffs.driver import wire
from ffs.switch.runtime import SwitchControl
from ffs.switch.tna import ControlError

log = logging.getLogger("ffs.switch.server")

MAX_REQUEST_BYTES = 16 << 20  # the agent's first install writes about 2 MB of tables in one batch
WORKERS = 2  # RPCs served at once: each one competes with the packet loop for the interpreter
MAX_PENDING = 64  # RPCs admitted (running or queued); more get RESOURCE_EXHAUSTED at once


def _yielding(fn: Callable[[Any], Any], items: list[Any], chunk: int = 256) -> list[Any]:
    """[fn(x) for x in items], handing the interpreter to the packet thread between chunks."""
    out: list[Any] = []
    for k in range(0, len(items), chunk):
        out.extend(fn(x) for x in items[k : k + chunk])
        time.sleep(0)
    return out


def _encode(obj: Any, chunk: int = 256) -> bytes:
    """json.dumps(obj), for the large answers ({"entries": [...]}, {"values": {...}}) in chunks with
    the interpreter handed to the packet thread in between: one json.dumps of a 4096-entry table
    would hold it for the whole encoding."""
    if isinstance(obj, dict) and len(obj) == 1:
        ((key, v),) = obj.items()
        if isinstance(v, (list, dict)) and len(v) > chunk:
            items = v if isinstance(v, list) else list(v.items())
            parts = []
            for k in range(0, len(items), chunk):
                part = items[k : k + chunk]
                parts.append(json.dumps(part if isinstance(v, list) else dict(part))[1:-1])
                time.sleep(0)
            body = "[" + ", ".join(parts) + "]" if isinstance(v, list) else "{" + ", ".join(parts) + "}"
            return ("{" + json.dumps(key) + ": " + body + "}").encode()
    return json.dumps(obj).encode()


def _handlers(ctl: SwitchControl) -> dict[str, Callable[[dict[str, Any]], Any]]:
    return {
        "ProgramId": lambda r: {"program_id": ctl.program_id},
        "Version": lambda r: {"version": ffs.__version__},
        "Write": lambda r: ctl.write([wire.update_from_json(u) for u in r["updates"]]) or {},
        "ReadTable": lambda r: {"entries": _yielding(wire.entry_to_json, ctl.read_table(r["table"]))},
        "ReadDefault": lambda r: {"entry": wire.entry_to_json(ctl.read_default(r["table"]))},
        "ClearTable": lambda r: ctl.clear_table(r["table"]) or {},
        "ReadCounters": lambda r: {
            "values": {str(i): [pk, by] for i, (pk, by) in ctl.read_counters(r["name"], r.get("indices")).items()}
        },
        "ResetCounters": lambda r: ctl.reset_counters(r["name"]) or {},
        "ReadRegisters": lambda r: {
            "values": {str(i): v for i, v in ctl.read_registers(r["name"], r.get("indices")).items()}
        },
        "WriteRegister": lambda r: ctl.write_register(r["name"], r["index"], r["value"]) or {},
        "SetLpfSpec": lambda r: ctl.set_lpf_spec(r["name"], r["indices"], wire.lpf_from_json(r["spec"])) or {},
        "ReadLpfSpec": lambda r: {"spec": wire.lpf_to_json(ctl.read_lpf_spec(r["name"], r["index"]))},
        "SetTimer": lambda r: ctl.set_timer(wire.timer_from_json(r["timer"])) or {},
        "ReadTimer": lambda r: {"timer": wire.timer_to_json(ctl.read_timer())},
        "ReadTmPorts": lambda r: {
            "values": {str(p): list(v) for p, v in ctl.read_tm_ports([int(x) for x in r["ports"]]).items()}
        },
    }


def _wrap(fn: Callable[[dict[str, Any]], Any]) -> Callable[[bytes, grpc.ServicerContext], bytes]:
    def call(request: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            req = loads_json(request, "request", MAX_REQUEST_BYTES) if request else {}
            if not isinstance(req, dict):
                raise ValueError("a request is a JSON object")
            return _encode(fn(req))
        except LoadError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except ControlError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except (KeyError, TypeError, ValueError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed request: {e}")
        raise AssertionError("unreachable")

    return call


def check_address(address: str, allow_remote: bool = False) -> str:
    """unix:PATH, localhost:PORT or 127.0.0.1:PORT / [::1]:PORT; anything else needs allow_remote."""
    if address.startswith("unix:"):
        if not address[5:]:
            raise ValueError("unix: needs a path")
        return address
    host = address.rsplit(":", 1)[0].strip("[]")
    if host in ("localhost", "127.0.0.1", "::1") or allow_remote:
        return address
    raise ValueError(f"refusing to listen on {address!r}: not loopback (pass --allow-remote to insist)")


def stop(server: grpc.Server, grace_s: float = 1.0) -> None:
    """Stop the control service and remove its Unix socket, if the file there is still the one it
    bound (a successor may already have replaced it with its own)."""
    bound = getattr(server, "ffs_socket", None)
    server.stop(grace_s).wait()
    if bound is not None:
        path, ino = bound
        try:
            if os.lstat(path).st_ino == ino:
                os.unlink(path)
        except FileNotFoundError:
            pass


def serve(ctl: SwitchControl, address: str, allow_remote: bool = False) -> grpc.Server:
    """Start the control service on `address` and return the running server."""
    address = check_address(address, allow_remote)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="ffs-control"),
        options=[("grpc.max_receive_message_length", MAX_REQUEST_BYTES), ("grpc.so_reuseport", 0)],
        maximum_concurrent_rpcs=MAX_PENDING,
    )
    handlers = {name: grpc.unary_unary_rpc_method_handler(_wrap(fn)) for name, fn in _handlers(ctl).items()}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(wire.SERVICE, handlers),))
    if address.startswith("unix:"):
        path = Path(address[5:])
        _listen_unix(server, path)
        server.ffs_socket = (path, os.lstat(path).st_ino)  # type: ignore[attr-defined]  # for stop()
    else:
        if server.add_insecure_port(address) == 0:
            raise OSError(f"cannot listen on {address}")
        if address.rsplit(":", 1)[0].strip("[]") in ("localhost", "127.0.0.1", "::1"):
            log.warning(
                "control service on TCP %s: any local user can change the switch's tables "
                "(the default, an owner-only unix socket, allows only this user and root)",
                address,
            )
        else:
            log.warning(
                "control service on %s, off loopback and unauthenticated: anyone who can reach it "
                "can change the switch's tables",
                address,
            )
    server.start()
    log.info("control service listening on %s", address)
    return server


def _listen_unix(server: grpc.Server, path: Path) -> None:
    """Bind `path` with mode 0600 whatever the umask (ffs.core.unixsock)."""

    def bind(tmp: str) -> None:
        if server.add_insecure_port(f"unix:{tmp}") == 0:
            raise OSError(f"cannot listen on unix:{path}")

    bind_private(path, bind)
