# SPDX-License-Identifier: Apache-2.0
"""JSON encoding of the Driver's types for the software switch's gRPC service.

The service carries JSON documents in gRPC messages (HTTP/2, unary calls, status codes for
errors); this module is its schema: one encoder and one decoder per type.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ffs.core.entries import Exact, KeyValue, LpfSpec, Lpm, Range, TableEntry, Ternary, TimerSpec, Update

SERVICE = "ffs.switch.Control"


def default_control_address() -> str:
    """The control service's default: an owner-only Unix socket (root: /run/ffs; others: their
    runtime directory, else a per-user directory under the temporary directory)."""
    if os.geteuid() == 0:
        base = "/run/ffs"
    elif os.environ.get("XDG_RUNTIME_DIR"):
        base = os.path.join(os.environ["XDG_RUNTIME_DIR"], "ffs")
    else:
        base = os.path.join(tempfile.gettempdir(), f"ffs-{os.geteuid()}")
    return f"unix:{base}/switch.sock"


def key_to_json(v: KeyValue) -> dict[str, Any]:
    if isinstance(v, Exact):
        return {"exact": v.value}
    if isinstance(v, Lpm):
        return {"lpm": [v.value, v.prefix_len]}
    if isinstance(v, Ternary):
        return {"ternary": [v.value, v.mask]}
    if isinstance(v, Range):
        return {"range": [v.low, v.high]}
    raise TypeError(f"not a key value: {v!r}")


def key_from_json(d: dict[str, Any]) -> KeyValue:
    if not isinstance(d, dict) or len(d) != 1:
        raise ValueError(f"bad key value {d!r}")
    ((kind, v),) = d.items()
    if kind == "exact":
        return Exact(int(v))
    if kind == "lpm":
        return Lpm(int(v[0]), int(v[1]))
    if kind == "ternary":
        return Ternary(int(v[0]), int(v[1]))
    if kind == "range":
        return Range(int(v[0]), int(v[1]))
    raise ValueError(f"bad key kind {kind!r}")


def entry_to_json(e: TableEntry) -> dict[str, Any]:
    return {
        "table": e.table,
        "key": {k: key_to_json(v) for k, v in e.key.items()},
        "action": e.action,
        "params": dict(e.params),
        "priority": e.priority,
    }


def entry_from_json(d: dict[str, Any]) -> TableEntry:
    return TableEntry(
        str(d["table"]),
        {str(k): key_from_json(v) for k, v in d.get("key", {}).items()},
        d.get("action"),
        {str(k): v for k, v in d.get("params", {}).items()},
        int(d.get("priority", 0)),
    )


def update_to_json(u: Update) -> dict[str, Any]:
    return {"kind": u.kind, "entry": entry_to_json(u.entry)}


def update_from_json(d: dict[str, Any]) -> Update:
    return Update(d["kind"], entry_from_json(d["entry"]))


def lpf_to_json(s: LpfSpec) -> dict[str, Any]:
    return {
        "kind": s.kind,
        "gain_time_constant_ns": s.gain_time_constant_ns,
        "decay_time_constant_ns": s.decay_time_constant_ns,
        "out_scale_down": s.out_scale_down,
    }


def lpf_from_json(d: dict[str, Any]) -> LpfSpec:
    return LpfSpec(
        d["kind"], float(d["gain_time_constant_ns"]), float(d["decay_time_constant_ns"]), int(d["out_scale_down"])
    )


def timer_to_json(t: TimerSpec | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"period_ns": t.period_ns, "packets": t.packets, "app_id": t.app_id, "packet_len": t.packet_len}


def timer_from_json(d: dict[str, Any] | None) -> TimerSpec | None:
    if d is None:
        return None
    return TimerSpec(int(d["period_ns"]), int(d["packets"]), int(d["app_id"]), int(d["packet_len"]))
