# SPDX-License-Identifier: Apache-2.0
"""The TNA externs the FFS program uses, with the semantics documented in docs/spec.md §8.

Match tables follow BF-RT: entries are addressed by the key-field names of `ffs.core.p4names`, actions
and parameters are checked against the P4 declaration (names, widths), and every refusal raises
ControlError before anything changes. Counters are 64-bit, registers 32-bit, the LPF is the RATE
/ SAMPLE filter of §8 and Random draws from a seeded generator.

Every counter, register and LPF has one copy per pipe, as on Tofino: the 9-bit device ports span
PIPES pipes of 128 ports (pipe = port >> 7, `ffs.core.ports.pipe_of`), an ingress object is updated in
the pipe of the packet's ingress port and an egress object in the pipe of its egress port. A cell
(pipe, index) is at `pipe * size + index` of the flat arrays, so pipe 0 is where a single-pipe
model kept it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ffs.core import constants, p4names
from ffs.core.entries import CounterValue, Exact, KeyValue, LpfSpec, Lpm, Range, TableEntry, Ternary, action_name

U16 = 0xFFFF
U32 = 0xFFFFFFFF
PIPE_SHIFT = 7  # Tofino 1: a pipe holds 128 device ports (ffs.core.ports.pipe_of)
PIPES = constants.NUM_PORTS >> PIPE_SHIFT  # the device ports 0..511 span 4 pipes


class ControlError(ValueError):
    """A control-plane operation the target refuses; the message is one line."""


def mac_frame(frame: bytes | bytearray) -> bytearray:
    """The packet as a Tofino MAC hands it to the pipeline (spec §8): padded to the Ethernet
    minimum of 60 bytes and followed by its 4-byte FCS (tofino-model appends zeros). The parser may
    read into the FCS, and pkt_length and every counter count it; the egress MAC replaces the last
    4 bytes of what the deparser emits (`mac_output`)."""
    out = bytearray(frame)
    if len(out) < constants.MIN_FRAME:
        out += bytes(constants.MIN_FRAME - len(out))
    return out + bytes(constants.FCS_LEN)


def arrival_change(grown: bool, l2_change: int) -> int:
    """What the ingress changed in a frame's length after it arrived (FfsEgressParser's
    md.arrival_change): a shim it inserted, an 802.1Q tag the host declared it popped or pushed."""
    tag = {constants.L2_TAG_POPPED: -constants.VLAN_TAG_LEN, constants.L2_TAG_PUSHED: constants.VLAN_TAG_LEN}
    return (constants.SHIM_LEN if grown else 0) + tag.get(l2_change, 0)


@dataclass(frozen=True)
class PktLength:
    """What the chip makes the egress's eg_intr_md.pkt_length of a frame (spec §7.3, frame_basis):
    with its FCS or without (`fcs`), and the length it arrived with or the one the ingress deparser
    emitted, a shim it inserted included (`deparsed`). The default is tofino-model's; the others
    model hardware that differs, for the agent's bring-up to measure (docs/hardware.md)."""

    fcs: bool = True
    deparsed: bool = False

    def of(self, arrival_len: int, grown: bool, l2_change: int = constants.L2_SAME) -> int:
        """pkt_length of a frame that arrived `arrival_len` bytes long, FCS included, into which
        the ingress inserted a shim if `grown`, and whose L2 header the host changed as
        `l2_change` declares."""
        change = arrival_change(grown, l2_change) if self.deparsed else 0
        return arrival_len - (0 if self.fcs else constants.FCS_LEN) + change

    @property
    def name(self) -> str:
        """As `ffs-switch run --pkt-length` names it (PKT_LENGTHS)."""
        return ("deparsed" if self.deparsed else "arrival") + ("+fcs" if self.fcs else "")


PKT_LENGTHS = {m.name: m for m in (PktLength(), PktLength(fcs=False), PktLength(deparsed=True), PktLength(False, True))}


def mac_output(buf: bytearray) -> bytes:
    """The frame that leaves: what the deparser emitted without its last 4 bytes (the FCS)."""
    return bytes(buf[: -constants.FCS_LEN])


def sat_sub(a: int, b: int) -> int:
    """a |-| b: saturating subtract at 0."""
    return a - b if a > b else 0


def sat_add(a: int, b: int, top: int) -> int:
    """a |+| b at the width whose maximum is `top`."""
    s = a + b
    return s if s < top else top


# --- match tables ----------------------------------------------------------------------------

ActionResult = tuple[str, dict[str, int]]  # (short action name, params)


@dataclass
class _Entry:
    key: tuple[KeyValue, ...]
    action: str  # short name
    params: dict[str, int]
    priority: int


class MatchTable:
    """An exact / LPM / ternary match table with a default action, as BF-RT exposes it."""

    def __init__(self, spec: p4names.Table, default_params: dict[str, int] | None = None) -> None:
        """default_params: those of the P4 default action (BF-RT's schema does not name them)."""
        self.spec = spec
        self.entries: dict[tuple, _Entry] = {}  # insertion order = the tie-break among equal priorities
        self._default: ActionResult = (action_name(spec.default_action), dict(default_params or {}))
        self._initial_default = self._default
        self._kinds = tuple(k.match for k in spec.keys)
        self._index: Any = None  # lookup structure, rebuilt lazily after a change
        self._cache: dict[tuple, ActionResult] = {}
        self.on_change: Callable[[], None] | None = None  # the compiled fast path recompiles on it

    # -- data plane --------------------------------------------------------------------------
    def lookup(self, *values: int) -> ActionResult:
        hit = self._cache.get(values)
        if hit is not None:
            return hit
        if self._index is None:
            self._build()
        hit = self._match(values)
        if len(self._cache) > 65536:
            self._cache.clear()
        self._cache[values] = hit
        return hit

    def _build(self) -> None:
        kinds = self._kinds
        if all(k == "exact" for k in kinds):
            self._index = {tuple(v.value for v in e.key): (e.action, e.params) for e in self.entries.values()}
        elif kinds == ("lpm",):
            by_len: dict[int, dict[int, ActionResult]] = {}
            width = self.spec.keys[0].width
            for e in self.entries.values():
                k = e.key[0]
                by_len.setdefault(k.prefix_len, {})[k.value >> (width - k.prefix_len)] = (e.action, e.params)
            self._index = sorted(by_len.items(), reverse=True)
        else:  # ternary / range: group by mask tuple; rank = (priority, insertion order)
            groups: dict[tuple, dict[tuple, tuple[tuple[int, int], _Entry]]] = {}
            ranges: list[tuple[tuple[int, int], _Entry]] = []
            for seq, e in enumerate(self.entries.values()):
                rank = (e.priority, seq)
                if any(isinstance(k, Range) for k in e.key):
                    ranges.append((rank, e))
                    continue
                masks = tuple(_mask(k, f.width) for k, f in zip(e.key, self.spec.keys, strict=False))
                vals = tuple(_value(k) for k in e.key)
                group = groups.setdefault(masks, {})
                if vals not in group or rank < group[vals][0]:  # same value/mask, several priorities
                    group[vals] = (rank, e)
            if len(self.spec.keys) == 1 and not ranges:  # every FFS ternary table: no tuples per probe
                self._index = [(m[0], {v[0]: hit for v, hit in g.items()}) for m, g in groups.items()]
            else:
                self._index = (list(groups.items()), ranges)

    def _match(self, values: tuple[int, ...]) -> ActionResult:
        idx = self._index
        kinds = self._kinds
        if all(k == "exact" for k in kinds):
            return idx.get(values, self._default)
        if kinds == ("lpm",):
            width = self.spec.keys[0].width
            v = values[0]
            for plen, table in idx:
                hit = table.get(v >> (width - plen))
                if hit is not None:
                    return hit
            return self._default
        # BF-RT: the lowest $MATCH_PRIORITY wins; among equal priorities the older entry
        if isinstance(idx, list):  # one key field
            v = values[0]
            found: tuple[tuple[int, int], _Entry] | None = None
            for mask, table in idx:
                hit = table.get(v & mask)
                if hit is not None and (found is None or hit[0] < found[0]):
                    found = hit
            return (found[1].action, found[1].params) if found else self._default
        groups, ranges = idx
        best: tuple[tuple[int, int], _Entry] | None = None
        for masks, table in groups:
            hit = table.get(tuple(v & m for v, m in zip(values, masks, strict=False)))
            if hit is not None and (best is None or hit[0] < best[0]):
                best = hit
        for rank, e in ranges:
            if (best is None or rank < best[0]) and all(
                _hits(k, v, f.width) for k, v, f in zip(e.key, values, self.spec.keys, strict=False)
            ):
                best = (rank, e)
        return (best[1].action, best[1].params) if best else self._default

    def _changed(self) -> None:
        self._index = None
        self._cache = {}
        if self.on_change is not None:
            self.on_change()

    # -- control plane -----------------------------------------------------------------------
    def normalize(self, entry: TableEntry, with_action: bool = True) -> tuple[tuple, _Entry]:
        """Validate an entry against the P4 declaration; return its identity and stored form."""
        spec = self.spec
        names = [k.name for k in spec.keys]
        if set(entry.key) != set(names):
            raise ControlError(f"{spec.name}: key fields must be {names}, got {sorted(entry.key)}")
        key = []
        for k in spec.keys:
            v = entry.key[k.name]
            key.append(_check_key(spec.name, k, v))
        key_t = tuple(key)
        ident = tuple(_ident(v) for v in key_t)
        if spec.keys and any(k.match in ("ternary", "range") for k in spec.keys):
            ident = ident + (entry.priority,)
        if not with_action:
            return ident, _Entry(key_t, "", {}, entry.priority)
        short, params = self.check_action(entry.action, entry.params)
        return ident, _Entry(key_t, short, params, entry.priority)

    def check_action(self, action: str | None, params: dict[str, int]) -> tuple[str, dict[str, int]]:
        if not action:
            raise ControlError(f"{self.spec.name}: an action is required")
        try:
            a = self.spec.action(action)
        except KeyError:
            raise ControlError(
                f"{self.spec.name}: unknown action {action!r} (have: {', '.join(x.short for x in self.spec.actions)})"
            ) from None
        want = dict(a.params)
        if set(params) != set(want):
            raise ControlError(f"{a.name}: parameters must be {sorted(want)}, got {sorted(params)}")
        for name, width in want.items():
            v = params[name]
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < (1 << width):
                raise ControlError(f"{a.name}: parameter {name}={v!r} does not fit in {width} bits")
        return a.short, {k: int(params[k]) for k in want}

    def set_default(self, action: str | None, params: dict[str, int]) -> None:
        self._default = self.check_action(action, params)
        self._changed()

    def default(self) -> ActionResult:
        return self._default

    def take_entries(self, other: MatchTable) -> None:
        """This table's entries become a copy of `other`'s, the same P4 table's, checked when they
        were written there (a test rig takes the 15,000 generated entries without a second check)."""
        if other.spec.name != self.spec.name:
            raise ControlError(f"{self.spec.name}: cannot take the entries of {other.spec.name}")
        self.entries = dict(other.entries)
        self._changed()

    def reset(self) -> None:
        self.entries.clear()
        self._default = self._initial_default
        self._changed()

    def to_entry(self, e: _Entry) -> TableEntry:
        return TableEntry(
            self.spec.name,
            {k.name: v for k, v in zip(self.spec.keys, e.key, strict=False)},
            f"{self.spec.name.rsplit('.', 1)[0]}.{e.action}",
            dict(e.params),
            e.priority,
        )


def _mask(k: KeyValue, width: int) -> int:
    if isinstance(k, Exact):
        return (1 << width) - 1
    if isinstance(k, Ternary):
        return k.mask
    if isinstance(k, Lpm):
        return ((1 << k.prefix_len) - 1) << (width - k.prefix_len)
    raise TypeError(k)


def _value(k: KeyValue) -> int:
    return k.value  # type: ignore[union-attr]


def _hits(k: KeyValue, v: int, width: int) -> bool:
    if isinstance(k, Range):
        return k.low <= v <= k.high
    return v & _mask(k, width) == _value(k)


def _ident(k: KeyValue) -> tuple:
    if isinstance(k, Exact):
        return ("e", k.value)
    if isinstance(k, Lpm):
        return ("l", k.value, k.prefix_len)
    if isinstance(k, Ternary):
        return ("t", k.value, k.mask)
    return ("r", k.low, k.high)


def _check_key(table: str, k: p4names.Key, v: KeyValue) -> KeyValue:
    top = (1 << k.width) - 1
    want = {"exact": Exact, "lpm": Lpm, "ternary": Ternary, "range": Range}[k.match]
    if k.match == "ternary" and isinstance(v, Exact):
        v = Ternary(v.value, top)
    if not isinstance(v, want):
        raise ControlError(f"{table}: key {k.name} is {k.match}, got {type(v).__name__}")
    ints = [getattr(v, a) for a in ("value", "mask", "low", "high", "prefix_len") if hasattr(v, a)]
    if any(not isinstance(x, int) or isinstance(x, bool) or x < 0 for x in ints):
        raise ControlError(f"{table}: key {k.name} needs non-negative integers, got {v!r}")
    if isinstance(v, Lpm):
        if not 0 <= v.prefix_len <= k.width or v.value > top:
            raise ControlError(f"{table}: key {k.name}: bad prefix {v.value:#x}/{v.prefix_len} for {k.width} bits")
        if v.value & ~_mask(v, k.width) & top:
            raise ControlError(f"{table}: key {k.name}: host bits set beyond /{v.prefix_len}")
    elif isinstance(v, Ternary):
        if v.value > top or v.mask > top:
            raise ControlError(f"{table}: key {k.name} does not fit in {k.width} bits")
        if v.value & ~v.mask:
            raise ControlError(f"{table}: key {k.name}: value has bits outside the mask")
    elif isinstance(v, Range):
        if v.high > top or v.low > v.high:
            raise ControlError(f"{table}: key {k.name}: bad range {v.low}..{v.high}")
    elif v.value > top:
        raise ControlError(f"{table}: key {k.name}={v.value} does not fit in {k.width} bits")
    return v


# --- counters, registers, LPF, Random ---------------------------------------------------------


def _zeros(typecode: str, n: int) -> array:
    a = array(typecode)
    a.frombytes(bytes(a.itemsize * n))
    return a


def _clear(a: array) -> None:
    """Zero in place: the compiled fast path holds pointers into these buffers."""
    memoryview(a).cast("B")[:] = bytes(a.itemsize * len(a))


class Counter:
    """Indexed 64-bit packet and byte counters (bf_switchd keeps 64-bit shadows of the hardware),
    one set per pipe.

    Storage is `array('Q')` so that the compiled fast path counts into the same cells."""

    def __init__(self, spec: p4names.Counter) -> None:
        self.spec = spec
        self.size = spec.size
        self.packets = _zeros("Q", PIPES * spec.size)
        self.bytes = _zeros("Q", PIPES * spec.size)
        # the P4 CounterType_t: a PACKETS counter's byte cells stay 0 (and a BYTES one's packets)
        self._pk, self._by = spec.kind != "BYTES", spec.kind != "PACKETS"

    def count(self, index: int, length: int, pipe: int) -> None:
        at = pipe * self.size + index
        if self._pk:
            self.packets[at] = (self.packets[at] + 1) & 0xFFFFFFFFFFFFFFFF
        if self._by:
            self.bytes[at] = (self.bytes[at] + length) & 0xFFFFFFFFFFFFFFFF

    def read(self, index: int, pipe: int) -> CounterValue:
        at = pipe * self.size + index
        return CounterValue(self.packets[at], self.bytes[at])

    def read_pipes(self, index: int) -> tuple[list[int], list[int]]:
        """Packets and bytes with one value per pipe, as BF-RT reads them for every pipe."""
        return self.packets[index :: self.size].tolist(), self.bytes[index :: self.size].tolist()

    def reset(self) -> None:
        _clear(self.packets)
        _clear(self.bytes)


class Register:
    """32-bit cells (`array('I')`, shared with the fast path), one set per pipe; one
    RegisterAction per packet, in the pipe that runs it."""

    def __init__(self, spec: p4names.Register) -> None:
        if spec.width != 32:
            raise ValueError(f"{spec.name}: only 32-bit registers are modelled")
        self.spec = spec
        self.size = spec.size
        self.cells = _zeros("I", PIPES * spec.size)
        self.top = (1 << spec.width) - 1

    def write(self, index: int, value: int, pipe: int) -> None:
        self.cells[pipe * self.size + index] = value & self.top

    def write_all_pipes(self, index: int, value: int) -> None:
        """A control-plane write: BF-RT's target of every pipe writes the value into each."""
        for pipe in range(PIPES):
            self.write(index, value, pipe)

    def read_pipes(self, index: int) -> list[int]:
        return self.cells[index :: self.size].tolist()


class Lpf:
    """Per-index low-pass filter (docs/spec.md §8).

    RATE: y <- y·e^(-dt/τ) + x with τ the decay constant (spec §8), a leaky integrator whose output
    for a steady input rate ρ (units per ns) approaches ρ·τ. SAMPLE: y <- y·e^(-dt/τ) +
    x·(1 - e^(-dt/τ)), an average of the samples, τ the gain constant while the input is above the
    state and the decay constant otherwise. The first sample sets y = x. The state saturates at
    2^32 - 1, as tofino-model's 32-bit state word does; the output is floor(y) >> s (the output
    scale-down divides the output only, it does not widen the state).

    The state is per pipe (cell `pipe * size + index`); the spec is one per index, since the
    control plane writes it to every pipe at once (BF-RT's target of every pipe).
    """

    def __init__(self, spec: p4names.Lpf) -> None:
        self.spec = spec
        n = self.size = spec.size
        # state in arrays the fast path shares: y, time of the last sample, whether one was seen
        self.state = _zeros("d", PIPES * n)
        self.last = _zeros("q", PIPES * n)
        self.seen = _zeros("B", PIPES * n)
        self.specs: list[LpfSpec] = [LpfSpec()] * n
        # the specs again as flat arrays for the fast path (kind 0 RATE / 1 SAMPLE)
        self.kind = _zeros("B", n)
        self.gain = array("d", [LpfSpec().gain_time_constant_ns] * n)
        self.decay = array("d", [LpfSpec().decay_time_constant_ns] * n)
        self.shift = array("B", [LpfSpec().out_scale_down] * n)

    def execute(self, x: int, index: int, t_ns: int, pipe: int) -> int:
        s = self.specs[index]
        at = pipe * self.size + index
        y = self.state[at]
        if self.seen[at]:
            dt = t_ns - self.last[at]
            if dt < 0:
                dt = 0
            if s.kind == "SAMPLE":
                tc = s.gain_time_constant_ns if x > y else s.decay_time_constant_ns
                a = math.exp(-dt / tc) if tc > 0 else 0.0
                y = y * a + x * (1.0 - a)
            else:
                tc = s.decay_time_constant_ns
                a = math.exp(-dt / tc) if tc > 0 else 0.0
                y = y * a + x
            if y > U32:  # the state is a 32-bit register: it saturates, and the scale-down comes after
                y = float(U32)
        else:
            y = float(x)
            self.seen[at] = 1
        self.state[at] = y
        self.last[at] = t_ns
        return int(y) >> s.out_scale_down

    def set_spec(self, index: int, spec: LpfSpec) -> None:
        """A control-plane write of one index's spec, to every pipe. It clears the index's state,
        as tofino-model's driver does (it zeroes the filter's word before it encodes the spec)."""
        self.specs[index] = spec
        self.kind[index] = 1 if spec.kind == "SAMPLE" else 0
        self.gain[index] = spec.gain_time_constant_ns
        self.decay[index] = spec.decay_time_constant_ns
        self.shift[index] = spec.out_scale_down
        for pipe in range(PIPES):
            at = pipe * self.size + index
            self.state[at] = 0.0
            self.seen[at] = 0


class Random16:
    """Random<bit<16>>: uniform over [0, 65535] from a seeded generator (CPython's Mersenne
    Twister; `getrandbits(16)` is the top 16 bits of one 32-bit output, which the fast path
    reproduces from the same state, so both draw the same numbers for a seed)."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self.get: Callable[[], int] = functools.partial(self._rng.getrandbits, 16)  # per packet

    def getstate(self) -> tuple:
        return self._rng.getstate()


def const_table(spec: p4names.Table, entries: list[TableEntry]) -> MatchTable:
    """A table with `const entries` in the P4 source: the entries in their source order, the first
    match winning (bf-p4c gives const entries priority by position)."""
    t = MatchTable(spec)
    for pos, e in enumerate(entries):
        ident, stored = t.normalize(dataclasses.replace(e, priority=pos))
        t.entries[ident] = stored
    return t
