# SPDX-License-Identifier: Apache-2.0
"""The values a target holds and a Driver reads or writes: match keys, table entries, updates,
counter values and LPF specs.

They name nothing of a particular target, so every layer uses them: the table generators
(`ffs.core.tables`), the agent, the Driver interface (`ffs.driver.base`) and its targets, and the software
switch, which stores them as it is programmed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping, Union

from ffs.core import constants


@dataclass(frozen=True)
class Exact:
    value: int


@dataclass(frozen=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    low: int
    high: int


KeyValue = Union[Exact, Lpm, Ternary, Range]


def exact_value(key: KeyValue) -> int:
    """The value of an exact-match key field (a TypeError for any other match kind)."""
    if not isinstance(key, Exact):
        raise TypeError(f"an exact match key was expected, got {key!r}")
    return key.value


@dataclass(frozen=True)
class TableEntry:
    """One match entry. `key` maps key-field names (p4names.Key.name) to match values.

    For ternary and range tables `priority` orders overlapping entries (higher wins, as BF-RT's
    $MATCH_PRIORITY with the SDE convention that a *lower* number is a *higher* priority is mapped
    here: use `priority=0` for disjoint entries). `action` is fully qualified as a target reads it
    back, or the action's own name as a generator may write it: compare `action_name`.
    """

    table: str
    key: Mapping[str, KeyValue]
    action: str | None = None
    params: dict[str, int] = field(default_factory=dict)
    priority: int = 0

    @property
    def action_name(self) -> str | None:
        """The action without its controls (`action_name`), as every reader compares it."""
        return action_name(self.action)


def action_name(action: str | None) -> str | None:
    """An action's own name, without the controls that declare it. Targets read entries back fully
    qualified (FfsIngress.pair_map.set_pair) while generators and operators write either form, so
    every comparison of actions, whoever read or wrote the entry, goes through this one rule."""
    return action.rsplit(".", 1)[-1] if action else None


UpdateKind = Literal["insert", "modify", "delete", "set_default"]


@dataclass(frozen=True)
class Update:
    kind: UpdateKind
    entry: TableEntry  # for set_default, key is {} and action/params give the default


@dataclass(frozen=True)
class CounterValue:
    packets: int
    bytes: int

    def __sub__(self, other: CounterValue) -> CounterValue:
        return CounterValue(self.packets - other.packets, self.bytes - other.bytes)


# counters are 64 bits wide on every target: a difference of two reads is taken modulo this
COUNTER_WRAP = 1 << 64


def counter_delta(now: CounterValue, before: CounterValue) -> CounterValue:
    """What a counter cell counted between two reads, modulo 2^64, so that a cell that wrapped in
    between gives its true increment. A cell cleared in between (by another client) gives a
    difference near 2^64 instead: telling the two apart is the caller's (the agent's JUMP)."""
    return CounterValue((now.packets - before.packets) % COUNTER_WRAP, (now.bytes - before.bytes) % COUNTER_WRAP)


@dataclass(frozen=True)
class TimerSpec:
    """The packet generator's timer application that drains the queue guard's virtual queues
    (spec §7.7): every `period_ns`, one batch of `packets` timer packets (packet_id 0 .. packets-1,
    each the `pktgen_timer_header_t` of `app_id` followed by zeros to `packet_len` bytes), entering
    the ingress on the generator's port of every pipe."""

    period_ns: int
    packets: int
    app_id: int = 1
    packet_len: int = constants.TIMER_PACKET_LEN

    def __post_init__(self) -> None:
        if not 0 < self.period_ns < 1 << 32:
            raise ValueError(f"timer period must be 1 ns .. 4.29 s, got {self.period_ns!r} ns")
        if not 0 < self.packets <= 4096:
            raise ValueError(f"timer packets per batch must be 1 .. 4096, got {self.packets!r}")
        if not 0 <= self.app_id < 8:
            raise ValueError(f"timer application must be 0 .. 7, got {self.app_id!r}")
        if not 64 <= self.packet_len <= 1024 or self.packet_len % 16:
            raise ValueError(f"timer packet length must be a multiple of 16 in 64 .. 1024, got {self.packet_len!r}")


@dataclass(frozen=True)
class LpfSpec:
    kind: Literal["RATE", "SAMPLE"] = "RATE"
    gain_time_constant_ns: float = 1e6
    decay_time_constant_ns: float = 1e6
    out_scale_down: int = 0  # 0..31, output = state >> out_scale_down

    def matches(self, held: LpfSpec, rel: float = 0.01) -> bool:
        """`held` (read back from a target) is this spec as the target stores it: Tofino keeps the
        time constants in a float format of its own (tofino-model reads 20 ms back as
        19.980488 ms, 1 ns as 0.99884 ns), so they agree within `rel`; kind and scale exactly."""

        def close(a: float, b: float) -> bool:
            return abs(a - b) <= rel * max(abs(a), abs(b))

        return (
            (self.kind, self.out_scale_down) == (held.kind, held.out_scale_down)
            and close(self.gain_time_constant_ns, held.gain_time_constant_ns)
            and close(self.decay_time_constant_ns, held.decay_time_constant_ns)
        )
