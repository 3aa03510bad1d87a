"""The software switch's control interface over gRPC (service `ffs.switch.Control`).

Each Driver operation is one unary method whose request and response are JSON documents
(`ffs.switch.wire`). A refused operation returns INVALID_ARGUMENT (or NOT_FOUND) with a one-line
message and changes nothing. The server listens on a Unix socket or on loopback only, unless the
operator names another address explicitly.
"""

from __future__ import annotations

import json
import logging
from concurrent import futures
from typing import Any, Callable

import grpc

from ffs.switch import wire
from ffs.switch.control import SwitchControl
from ffs.switch.tna import ControlError

log = logging.getLogger("ffs.switch.server")


def _handlers(ctl: SwitchControl) -> dict[str, Callable[[dict[str, Any]], Any]]:
    return {
        "ProgramId": lambda r: {"program_id": ctl.program_id},
        "Write": lambda r: ctl.write([wire.update_from_json(u) for u in r["updates"]]) or {},
        "ReadTable": lambda r: {"entries": [wire.entry_to_json(e) for e in ctl.read_table(r["table"])]},
        "ReadDefault": lambda r: {"entry": wire.entry_to_json(ctl.read_default(r["table"]))},
        "ClearTable": lambda r: ctl.clear_table(r["table"]) or {},
        "ReadCounters": lambda r: {
            "values": {str(i): wire.counter_to_json(v) for i, v in ctl.read_counters(r["name"], r.get("indices")).items()}
        },
        "ResetCounters": lambda r: ctl.reset_counters(r["name"]) or {},
        "ReadRegisters": lambda r: {"values": {str(i): v for i, v in ctl.read_registers(r["name"], r.get("indices")).items()}},
        "WriteRegister": lambda r: ctl.write_register(r["name"], r["index"], r["value"]) or {},
        "SetLpfSpec": lambda r: ctl.set_lpf_spec(r["name"], r["indices"], wire.lpf_from_json(r["spec"])) or {},
        "ReadLpfSpec": lambda r: {"spec": wire.lpf_to_json(ctl.read_lpf_spec(r["name"], r["index"]))},
    }


def _wrap(fn: Callable[[dict[str, Any]], Any]) -> Callable[[bytes, grpc.ServicerContext], bytes]:
    def call(request: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            req = json.loads(request) if request else {}
            return json.dumps(fn(req)).encode()
        except ControlError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except (KeyError, TypeError, ValueError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed request: {e}")
        raise AssertionError("unreachable")

    return call


def check_address(address: str, allow_remote: bool = False) -> str:
    """unix:PATH, localhost:PORT or 127.0.0.1:PORT / [::1]:PORT; anything else needs allow_remote."""
    if address.startswith("unix:"):
        return address
    host = address.rsplit(":", 1)[0].strip("[]")
    if host in ("localhost", "127.0.0.1", "::1") or allow_remote:
        return address
    raise ValueError(f"refusing to listen on {address!r}: not loopback (pass --allow-remote to insist)")


def serve(ctl: SwitchControl, address: str, allow_remote: bool = False) -> grpc.Server:
    """Start the control service on `address` and return the running server."""
    address = check_address(address, allow_remote)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(_wrap(fn)) for name, fn in _handlers(ctl).items()
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(wire.SERVICE, handlers),))
    if server.add_insecure_port(address) == 0 and not address.startswith("unix:"):
        raise OSError(f"cannot listen on {address}")
    server.start()
    log.info("control service listening on %s", address)
    return server
