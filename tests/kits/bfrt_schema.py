# SPDX-License-Identifier: Apache-2.0
"""The compiled program's bf-rt.json against ffs.core.p4names, for test_compiled_program (which compiles)
and test_p4names_bfrt (which reads a build that is already there)."""

from __future__ import annotations

import json
from pathlib import Path

from ffs.core import p4names

MATCH = {"Exact": "exact", "Ternary": "ternary", "LPM": "lpm", "Range": "range"}


def schema_of(out: Path) -> dict[str, dict]:
    """bf-rt.json's tables of a build directory (build/<chip>/ffs), by name without `pipe.`."""
    return {t["name"].removeprefix("pipe."): t for t in json.loads((out / "bf-rt.json").read_text())["tables"]}


def check_p4names(schema: dict[str, dict]) -> None:
    """Every object ffs.core.p4names names is compiled, with its shape, and nothing else is: tables
    (keys: name, match kind, width; actions and their parameters' widths; size), counters (size,
    kind), registers (size, width), LPFs (size) and the port metadata (key, fields)."""
    want = {t.name for t in p4names.TABLES} | {c.name for c in p4names.COUNTERS} | {r.name for r in p4names.REGISTERS}
    want |= {lpf.name for lpf in p4names.LPFS} | {p4names.PORT_METADATA.name}
    compiled = {
        n
        for n, t in schema.items()
        if t["table_type"]
        in ("MatchAction_Direct", "MatchAction_Indirect", "Counter", "Register", "Lpf", "PortMetadata")
    }
    assert compiled == want
    for t in p4names.TABLES:
        s = schema[t.name]
        keys = [
            (k["name"], MATCH[k["match_type"]], k["type"]["width"]) for k in s["key"] if k["name"] != "$MATCH_PRIORITY"
        ]
        assert keys == [(k.name, k.match, k.width) for k in t.keys], t.name
        acts = {a["name"]: [(p["name"], p["type"]["width"]) for p in a["data"]] for a in s["action_specs"]}
        assert acts == {a.name: list(a.params) for a in t.actions}, t.name
        assert s["size"] == t.size, t.name
    for c in p4names.COUNTERS:
        fields = {d["singleton"]["name"] for d in schema[c.name]["data"]}
        kind = {
            frozenset({"$COUNTER_SPEC_PKTS"}): "PACKETS",
            frozenset({"$COUNTER_SPEC_BYTES"}): "BYTES",
            frozenset({"$COUNTER_SPEC_PKTS", "$COUNTER_SPEC_BYTES"}): "PACKETS_AND_BYTES",
        }[frozenset(fields)]
        assert (schema[c.name]["size"], kind) == (c.size, c.kind), c.name
    for r in p4names.REGISTERS:
        (field,) = [d["singleton"] for d in schema[r.name]["data"]]
        assert (schema[r.name]["size"], field["type"]["width"]) == (r.size, r.width), r.name
    for lpf in p4names.LPFS:
        assert schema[lpf.name]["size"] == lpf.size
    pm = schema[p4names.PORT_METADATA.name]
    assert [(k["name"], k["type"]["width"]) for k in pm["key"]] == [
        (p4names.PORT_METADATA.key.name, p4names.PORT_METADATA.key.width)
    ]
    fields = [(d["singleton"]["name"], d["singleton"]["type"]["width"]) for d in pm["data"]]
    assert [f for f in fields if not f[0].startswith("pad")] == list(p4names.PORT_METADATA.fields)  # @padding bits
