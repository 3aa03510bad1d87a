# SPDX-License-Identifier: Apache-2.0
"""The shapes of the P4 objects the control plane and the software switch address: a table's keys,
actions and size, a counter, a register, an LPF and the port metadata table.

The objects themselves are in ffs.core.p4names, generated from the compiled program (`make names`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ffs.core.entries import action_name


@dataclass(frozen=True)
class Key:
    name: str  # the @name of the key field, as BF-RT shows it
    match: str  # exact | lpm | ternary | range
    width: int


@dataclass(frozen=True)
class Action:
    name: str  # fully qualified, e.g. "FfsIngress.forwarding.route"
    params: tuple[tuple[str, int], ...] = ()

    @property
    def short(self) -> str:
        return action_name(self.name) or ""


@dataclass(frozen=True)
class Table:
    name: str
    keys: tuple[Key, ...]
    actions: tuple[Action, ...]
    default_action: str  # fully qualified action name
    size: int
    const_entries: bool = False  # entries fixed in the P4 source, not writable

    def action(self, name: str) -> Action:
        for a in self.actions:
            if a.name == name or a.short == name:
                return a
        raise KeyError(f"table {self.name} has no action {name!r}")


@dataclass(frozen=True)
class Counter:
    name: str
    size: int
    kind: str = "PACKETS_AND_BYTES"  # PACKETS | BYTES | PACKETS_AND_BYTES


@dataclass(frozen=True)
class Register:
    name: str
    width: int
    size: int


@dataclass(frozen=True)
class Lpf:
    name: str
    size: int


@dataclass(frozen=True)
class PortMetadata:
    """The TNA per-port parser metadata table (`$PORT_METADATA` of the ingress parser)."""

    name: str
    key: Key
    fields: tuple[tuple[str, int], ...] = field(default_factory=tuple)


def find_table(tables: Sequence[Table], name: str) -> Table:
    """A table by its full name or a unique suffix (as BF-RT allows)."""
    hits = [t for t in tables if t.name == name or t.name.endswith("." + name)]
    if len(hits) != 1:
        raise KeyError(f"unknown or ambiguous table {name!r}")
    return hits[0]
